"""The one training loop every method runs through: step, evaluate, save, resume.

Per step (``step.py``): this process's share of the global batch, cut into ``grad_accumulation``
micro-batches (accumulated without changing a batch-level loss: ``accumulation.py``); the method's loss; a
NaN/inf check before any update; clipping; Adam(W) and a linear schedule (``schedule.py``). Precision:
fp32, bf16 autocast over fp32 weights, or bf16 weights. Every ``eval_steps`` (and before the first
step) the evaluation callbacks run (``callbacks.py``) and the best checkpoint is kept, higher or lower
being better as the selected metric declares (``selection.py``); every
``save_every`` steps a checkpoint joins the series ``OUT/checkpoints/step-NNNNNN`` (SimCSE Fig. 2,
the cropping paper's Figs. 1 and 3 are drawn from one); every ``save_steps`` the resume state is
written. A stopped run continues with ``--resume`` and takes the same batches it would have.
"""

from __future__ import annotations

import contextlib
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..core.atomic import write_json
from ..core.boundary import python_api
from ..core.errors import EmbenchError
from ..data.root import DataRoot
from ..models.device_choice import pick_device
from ..report.progress import RateProgress, announce
from . import checkpoints, distributed
from .batch_order import steps_per_epoch
from .callbacks import Evaluator
from .config import TrainConfig
from .configure import missing_requirements
from .divergence import diverged
from .fit_memory import StepFit, choose_before_first_step
from .footprint import Footprint, human, measure
from .frozen_weights import hold_frozen_weights
from .methods import METHODS
from .metrics_log import MetricsLog
from .mixed_precision import eval_dtype, grad_scaler, precision_context, resolve_precision
from .module import unpadded_passes
from .out_lock import OutputLock
from .previous_run import clear_or_refuse, resume_or_start_afresh
from .rank_rng import gather_rng_states, seed_all
from .resolution import resolve
from .run_state import data_fingerprint, finish_export, resume_state, writing
from .schedule import make_optimizer, make_scheduler, warmup_steps
from .selection import Selection, choose, warn_if_untrained_was_best
from .spellings import train_spelling
from .step import no_sync, optimiser_step
from .throughput import Throughput
from .weights_health import CollapseWatch, weights_problem

log = logging.getLogger(__name__)


@dataclass
class TrainResult:
    out: Path
    best_dir: Path
    best_step: int
    best_score: float | None
    initial_score: float | None
    steps: int
    last_loss: float | None
    metrics: Path
    history: list[dict[str, Any]] = field(default_factory=list)
    series: list[Path] = field(default_factory=list)
    footprint: Footprint | None = None  # peak memory and the output folder's size (main process)


class Trainer:
    """Runs one method on one configuration.

    >>> from embench.train import Trainer, make_config
    >>> Trainer(make_config(recipe="crop", model="all-MiniLM-L6-v2", max_steps=100)).fit()  # doctest: +SKIP
    """

    # errors say batch_size=, not --batch-size; setup() is left bare: the generators it seeds are what step() draws from
    # after it returns, which restoring the caller's random state would undo
    @python_api(train_spelling)
    def __init__(self, cfg: TrainConfig):
        self.cfg = cfg = resolve(cfg)
        self.method = METHODS.get(cfg.method)(cfg)
        self.dist = distributed.init_from_env(cfg.device)
        device = pick_device(cfg.device)
        self.device = f"cuda:{self.dist.local_rank}" if self.dist.enabled and device.startswith("cuda") else device
        if cfg.batch_size % (self.dist.world_size * cfg.grad_accumulation):
            raise EmbenchError(f"--batch-size {cfg.batch_size} must divide evenly over {self.dist.world_size} process(es) "
                               f"x {cfg.grad_accumulation} accumulation step(s)")
        self.precision = resolve_precision(cfg.precision, self.device)
        self.root = DataRoot.resolve(cfg.data_root)
        self.out = Path(cfg.out)
        self.metrics = MetricsLog()  # metrics.jsonl and tensorboard, open while fit() runs
        self.history: list[dict[str, Any]] = self.metrics.history
        self.best_score: float | None = None
        self.best_step, self.initial, self.start, self.out_checked = 0, None, 0, False  # out_checked: previous_run.py, once
        self.selection: Selection | None = None
        self.step_fit = StepFit.as_set(cfg)  # how a step runs; setup() may split it more

    # -- setup -----------------------------------------------------------------------------------
    def setup(self) -> None:
        cfg, dist = self.cfg, self.dist
        missing = missing_requirements(cfg)  # before anything is loaded
        if missing:
            option, why = next(iter(missing.items()))
            raise EmbenchError(f"--recipe {cfg.recipe} needs --{option.replace('_', '-')}: {why}")
        self.evaluator = None  # built first: a misspelt task or analysis stops the run before any loading
        if cfg.eval_steps:
            self.evaluator = Evaluator(cfg.eval_tasks or [], cfg.eval_analyses, self.root, self.out,
                                       batch_size=cfg.eval_batch_size, max_length=cfg.eval_max_length,
                                       dtype=eval_dtype(self.precision))
            self.selection = choose(cfg.select_on, self.evaluator.metrics, self.evaluator.directions)
        seed_all(cfg.seed + dist.rank)
        self.cfg = cfg = resume_or_start_afresh(self.out, cfg, say=dist.is_main)  # --resume with no checkpoint yet
        self.out_checked = self.out_checked or clear_or_refuse(self.out, cfg, clear=dist.is_main)  # another run's there?
        self.out.mkdir(parents=True, exist_ok=True)
        self.examples = self.method.examples(self.root)
        self.data_fingerprint = data_fingerprint(self.examples)  # another file, --max-examples or an edit: another run
        n = len(self.examples)
        self.per_epoch = steps_per_epoch(n, cfg.batch_size, cfg.drop_last)  # the last, smaller batch too unless drop_last
        if self.per_epoch == 0:
            raise EmbenchError(f"{n} training examples are fewer than one batch of {cfg.batch_size}, which drop_last leaves "
                               "out (--set drop_last=false)" if n else f"no training examples in {', '.join(cfg.data)}")
        self.total = self.method.total_steps = cfg.max_steps or max(1, math.ceil(cfg.epochs * self.per_epoch))
        self.warmup = warmup_steps(cfg, self.total, self.per_epoch)
        self.model = self.method.build(self.device)
        if self.precision == "bf16":  # every weight (heads a method added too) and so the optimiser states
            self.model.to(torch.bfloat16)
        elif cfg.lora_r and self.method.exports_adapter_alone and (freed := hold_frozen_weights(self.model, self.precision)):
            announce(cfg.progress, f"memory: the frozen base weights held in {self.precision[:4]}, as autocast computes with them ({human(freed)} less)")
        if cfg.unpadded:
            unpadded_passes(self.model, cfg, self.device, self.precision)
        if cfg.compile:
            self.model.encoder.compile()  # in place: state_dict keys stay those of the model
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        if not self.params:
            raise EmbenchError("every parameter is frozen: nothing to train")
        self.optimizer = make_optimizer(self.params, cfg)
        self.scaler = grad_scaler(self.precision, self.device)
        self.scheduler = make_scheduler(self.optimizer, self.total, self.warmup, cfg.lr_schedule)
        # before the first step: a step that cannot fit is said (and split) now, not found out after minutes
        self.step_fit = choose_before_first_step(self, lambda line: announce(cfg.progress, line))
        self.runner: torch.nn.Module = self.model
        if dist.enabled:  # unused heads are frozen by the module, so every trained parameter gets a gradient
            self.runner = torch.nn.parallel.DistributedDataParallel(
                self.model, device_ids=[dist.local_rank] if self.device.startswith("cuda") else None)
        self.meta = {"method": cfg.method, "recipe": cfg.recipe, "base_model": cfg.model, "from_scratch": cfg.from_scratch,
                     "data": cfg.data, "examples": n, "data_sha256": self.data_fingerprint, "total_steps": self.total,
                     "config": cfg.to_dict()}  # what the model card (train/model_card.py) says of the run
        self.metrics_path = self.out / "metrics.jsonl"
        if cfg.resume:
            resume_state(self)
        elif dist.is_main:
            self.metrics_path.unlink(missing_ok=True)
            write_json(self.out / "train_config.json", {
                **cfg.to_dict(), "resolved_total_steps": self.total, "warmup_steps": self.warmup, "examples": n,
                "world_size": dist.world_size, "device": self.device, "precision": self.precision, **self.step_fit.record(),
                "unpadded_used": bool(getattr(self.model, "unpadded", False)),
                "pooling": getattr(self.method.encoder_for_eval(self.model), "pooling", cfg.pooling)})

    # -- one step --------------------------------------------------------------------------------
    def autocast(self) -> contextlib.AbstractContextManager:
        return precision_context(self.precision, self.device)

    def no_sync(self) -> contextlib.AbstractContextManager:
        return no_sync(self.runner)

    def step(self, step: int) -> tuple[float, float, dict[str, float]]:
        """One optimiser step (``step.py``); returns (loss, gradient norm, the method's logs)."""
        return optimiser_step(self, step)

    # -- evaluate and save -----------------------------------------------------------------------
    def evaluate(self, step: int) -> dict[str, Any] | None:
        scores = None
        if self.dist.is_main and self.evaluator is not None:
            scores = self.evaluator(self.method.encoder_for_eval(self.runner), step)
            assert self.selection is not None  # chosen with the evaluator in setup()
            select, score = self.selection.metric, self.selection.score(scores)
            if self.initial is None and step == 0:
                self.initial = score
            # step 0 is the untrained model: logged as the initial score, but kept as the best only when asked
            # (select_initial), as the authors' trainers evaluate during training, never before it (SimCSE:
            # HF Trainer's evaluation every eval_steps)
            eligible = step > 0 or self.cfg.select_initial
            better = eligible and self.selection.improves(score, self.best_score)  # higher or lower, as declared
            if better:
                self.best_score, self.best_step = score, step
                self.export(self.out / checkpoints.BEST_DIR, step, {select: score, "selected_on": self.selection.describe(), "scores": scores})
            self.emit({"step": step, **{f"eval/{k}": v for k, v in scores.items()}, "best": better})
        distributed.barrier()
        return scores  # the main process's: a --save-every checkpoint of this step carries them

    def export(self, folder: Path, step: int, extra: dict[str, Any] | None = None) -> Path:
        self._check_weights(step)
        with writing(folder):
            return self.method.export(self.runner, folder, {**self.meta, "step": step, **(extra or {})})

    def _check_weights(self, step: int) -> None:
        """A checkpoint is written only of weights that can be trained on and used (finite, not exploded)."""
        problem = weights_problem(self.model)
        if problem is not None:
            diverged(self.out, self.best_score, f"the weights at step {step} are not worth keeping ({problem}): nothing was written")

    def save_resume(self, step: int) -> None:
        rng_ranks = gather_rng_states(self.dist)  # every process's: each restores its own on --resume
        if self.dist.is_main:
            self._check_weights(step)
            with writing(self.out / checkpoints.RESUME_DIR):
                checkpoints.save_resume(self.out / checkpoints.RESUME_DIR, model=self.model, optimizer=self.optimizer,
                                        scheduler=self.scheduler, step=step, rng_ranks=rng_ranks, extra={
                                            "best_score": self.best_score, "best_step": self.best_step,
                                            "initial_score": self.initial, "config": self.cfg.to_dict(),
                                            **({"grad_scaler": self.scaler.state_dict()} if self.scaler.is_enabled() else {}),
                                            "data_fingerprint": self.data_fingerprint})
        distributed.barrier()

    def emit(self, rec: dict[str, Any]) -> None:
        self.metrics.emit(rec)

    # -- the loop --------------------------------------------------------------------------------
    @python_api(train_spelling)  # the caller's random state back after the run, which seeds its own from cfg.seed
    def fit(self) -> TrainResult:
        """Train to the last step; see the module docstring."""
        lock = OutputLock(self.out).acquire() if self.dist.is_main else None  # one run per --out at a time
        try:
            return self._fit()
        finally:
            if lock is not None:
                lock.release()

    def _fit(self) -> TrainResult:
        self.setup()
        cfg, dist = self.cfg, self.dist
        series_dir = self.out / "checkpoints"
        save_resume_every = checkpoints.resume_every(cfg)
        try:
            if dist.is_main:
                self.metrics.open(self.metrics_path, self.out / "tensorboard" if cfg.tensorboard else None)
            if cfg.eval_steps and self.start == 0:
                self.evaluate(0)
            self.model.train()
            last_loss = self._loop(save_resume_every, series_dir)
        finally:
            self.metrics.close()
        best = self.out / checkpoints.BEST_DIR
        finishing = dist.is_main and self.start >= self.total and not best.is_dir()
        if finishing and cfg.eval_steps:
            finish_export(self, best)  # a run killed between its last checkpoint and its export: finished now
        if dist.is_main and self.selection is not None and not cfg.select_initial:
            warn_if_untrained_was_best(self.initial, self.best_score, self.best_step, self.selection)
        if not cfg.eval_steps and dist.is_main and (self.start < self.total or finishing):  # keep the last step
            self.best_step = self.total
            self.export(best, self.total, {"selected": "last step (no evaluation)"})
        distributed.barrier()
        series = sorted(series_dir.glob("step-*")) if series_dir.is_dir() else []
        footprint = measure(self.out, self.device) if dist.is_main else None
        if footprint is not None:
            log.info("%s", footprint.describe())
        return TrainResult(self.out, best, self.best_step, self.best_score, self.initial, self.total, last_loss,
                           self.metrics_path, self.history, series, footprint)

    def _loop(self, save_resume_every: int, series_dir: Path) -> float | None:
        cfg, dist = self.cfg, self.dist
        last_loss = None
        speed = Throughput(self.method.encoder_for_eval(self.model), dist.world_size)
        progress = RateProgress(cfg.progress and dist.is_main, "training", f"{cfg.method} {Path(cfg.model).name}",
                                self.total, "steps", completed=self.start, fields=("loss",))
        collapse = CollapseWatch()
        with progress:
            for step in range(self.start, self.total):
                loss, gnorm, logs = self.step(step)
                last_loss, done = loss, step + 1
                if collapse.update(loss, gnorm):
                    diverged(self.out, self.best_score, collapse.describe(loss, done, cfg.batch_size), since=done - collapse.run)
                speed.stepped()
                progress.advance(loss=f"{loss:.4f}")
                if done % cfg.log_steps == 0 or done == self.total:
                    self.emit({"step": done, "loss": loss, "lr": self.scheduler.get_last_lr()[0], "grad_norm": gnorm,
                               **logs, **speed.read()})
                scores = self.evaluate(done) if cfg.eval_steps and (done % cfg.eval_steps == 0 or done == self.total) else None
                if cfg.save_every and done % cfg.save_every == 0 and dist.is_main:
                    self.export(series_dir / f"step-{done:06d}", done, checkpoints.series_meta(scores))
                if collapse.save_now(done % save_resume_every == 0, done == self.total):  # held while gradients are flat
                    self.save_resume(done)
                speed.after_pause()  # speed is measured on training steps only, not evaluation or saving
        return last_loss


@python_api(train_spelling)
def train(cfg: TrainConfig) -> TrainResult:
    """Train ``cfg.method`` and keep the best checkpoint.

    >>> from embench.train import make_config, train
    >>> r = train(make_config(recipe="crop", model="all-MiniLM-L6-v2", max_steps=200, out="runs/crop"))  # doctest: +SKIP
    >>> r.best_dir                                                                                   # doctest: +SKIP
    """
    return Trainer(cfg).fit()
