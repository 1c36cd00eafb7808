"""The one training loop every method runs through: step, evaluate, save, resume.

Per step: this process's share of the global batch, cut into ``grad_accumulation`` micro-batches
(accumulated without changing a batch-level loss: ``accumulation.py``); the method's loss; a NaN/inf
check before any update; clipping; Adam(W) and a linear schedule (``schedule.py``). Precision:
fp32, bf16 autocast over fp32 weights, or bf16 weights. Every ``eval_steps`` (and before the first
step) the evaluation callbacks run (``callbacks.py``) and the best checkpoint is kept; every
``save_every`` steps a checkpoint joins the series ``OUT/checkpoints/step-NNNNNN`` (SimCSE Fig. 2,
the cropping paper's Figs. 1 and 3 are drawn from one); every ``save_steps`` the resume state is
written. A stopped run continues with ``--resume`` and takes the same batches it would have.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..core.errors import EmbenchError
from ..data.root import DataRoot
from ..models.device_choice import pick_device
from ..models.precision import warn_if_emulated
from ..report.progress import RateProgress, announce
from . import checkpoints, distributed
from .accumulation import cached_step
from .batch_order import batch_indices
from .callbacks import Evaluator
from .config import TrainConfig
from .configure import missing_requirements
from .divergence import diverged
from .footprint import Footprint, measure
from .memory_estimate import say_step_memory
from .methods import METHODS
from .out_lock import OutputLock
from .resolution import resolve
from .run_state import data_fingerprint, finish_export, resume_state, writing
from .schedule import make_optimizer, make_scheduler, warmup_steps
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

    def __init__(self, cfg: TrainConfig):
        self.cfg = cfg = resolve(cfg)
        self.method = METHODS.get(cfg.method)(cfg)
        self.dist = distributed.init_from_env(cfg.device)
        device = pick_device(cfg.device)
        if self.dist.enabled and device.startswith("cuda"):
            device = f"cuda:{self.dist.local_rank}"
        self.device = device
        if cfg.batch_size % (self.dist.world_size * cfg.grad_accumulation):
            raise EmbenchError(f"--batch-size {cfg.batch_size} must divide evenly over {self.dist.world_size} process(es) "
                               f"x {cfg.grad_accumulation} accumulation step(s)")
        cuda = device.startswith("cuda")
        precision = cfg.precision
        if precision == "auto":
            precision = "bf16-mixed" if cuda and torch.cuda.is_bf16_supported() else "fp32"
        self.precision = precision
        if precision != "fp32":
            warn_if_emulated(device.split(":")[0], "bf16")  # bf16 training on a CPU without bf16 arithmetic is slow
        self.root = DataRoot.resolve(cfg.data_root)
        self.out = Path(cfg.out)
        self.history: list[dict[str, Any]] = []
        self.best_score: float | None = None
        self.best_step, self.initial, self.start = 0, None, 0
        self._log: Any = None  # metrics.jsonl and tensorboard, open while fit() runs
        self._writer: Any = None

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
                                       dtype="bf16" if self.precision != "fp32" else "fp32")
        _seed(cfg.seed + dist.rank)
        self.out.mkdir(parents=True, exist_ok=True)
        self.examples = self.method.examples(self.root)
        self.data_fingerprint = data_fingerprint(self.examples)  # another file, --max-examples or an edit: another run
        n = len(self.examples)
        self.per_epoch = n // cfg.batch_size
        if self.per_epoch == 0:
            raise EmbenchError(f"{n} training examples are fewer than one batch of {cfg.batch_size}")
        self.total = cfg.max_steps or max(1, math.ceil(cfg.epochs * self.per_epoch))
        self.warmup = warmup_steps(cfg, self.total, self.per_epoch)
        self.model = self.method.build(self.device)
        if self.precision == "bf16":  # every weight (heads a method added too) and so the optimiser states
            self.model.to(torch.bfloat16)
        if cfg.compile:
            self.model.encoder.compile()  # in place: state_dict keys stay those of the model
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        if not self.params:
            raise EmbenchError("every parameter is frozen: nothing to train")
        self.optimizer = make_optimizer(self.params, cfg)
        self.scheduler = make_scheduler(self.optimizer, self.total, self.warmup, cfg.lr_schedule)
        if dist.is_main:  # before the first step: a step that cannot fit is said now, not found out after minutes
            say_step_memory(self, lambda line: announce(cfg.progress, line))
        self.runner: torch.nn.Module = self.model
        if dist.enabled:  # unused heads are frozen by the module, so every trained parameter gets a gradient
            self.runner = torch.nn.parallel.DistributedDataParallel(
                self.model, device_ids=[dist.local_rank] if self.device.startswith("cuda") else None)
        self.meta = {"method": cfg.method, "recipe": cfg.recipe, "base_model": cfg.model, "from_scratch": cfg.from_scratch}
        self.metrics_path = self.out / "metrics.jsonl"
        if cfg.resume:
            resume_state(self)
        elif dist.is_main:
            self.metrics_path.unlink(missing_ok=True)
            checkpoints.write_json(self.out / "train_config.json", {
                **cfg.to_dict(), "resolved_total_steps": self.total, "warmup_steps": self.warmup, "examples": n,
                "world_size": dist.world_size, "device": self.device, "precision": self.precision,
                "pooling": getattr(self.method.encoder_for_eval(self.model), "pooling", cfg.pooling)})

    # -- one step --------------------------------------------------------------------------------
    def autocast(self) -> contextlib.AbstractContextManager:
        if self.precision != "bf16-mixed":
            return contextlib.nullcontext()
        return torch.autocast(device_type="cuda" if self.device.startswith("cuda") else "cpu", dtype=torch.bfloat16)

    def no_sync(self) -> contextlib.AbstractContextManager:
        sync = getattr(self.runner, "no_sync", None)
        return sync() if callable(sync) else contextlib.nullcontext()

    def step(self, step: int) -> tuple[float, float, dict[str, float]]:
        """One optimiser step; returns (loss, gradient norm, the method's logs)."""
        cfg = self.cfg
        idx = batch_indices(len(self.examples), cfg.batch_size, step, cfg.seed, self.dist)
        rng = random.Random(f"{cfg.seed}:{step}:{self.dist.rank}")
        micro = len(idx) // cfg.grad_accumulation
        batches = [self.method.batch(self.examples, idx[i : i + micro], rng) for i in range(0, len(idx), micro)]
        self.optimizer.zero_grad(set_to_none=True)
        if len(batches) == 1:
            with self.autocast():
                loss, logs = self.method.loss(self.runner, batches[0], self.dist)
            value = distributed.mean_over_processes(float(loss.detach()))  # the global loss, checked before backward
            self._check_finite("loss", value, step)
            loss.backward()
        else:
            loss, logs = cached_step(self.method, self.runner, batches, self.dist, self.autocast,
                                     torch.device(self.device), self.no_sync)
            value = distributed.mean_over_processes(float(loss))
            self._check_finite("loss", value, step)
        clip = cfg.grad_clip if cfg.grad_clip > 0 else float("inf")
        gnorm = float(torch.nn.utils.clip_grad_norm_(self.params, clip))
        if not math.isfinite(gnorm):
            self.optimizer.zero_grad(set_to_none=True)
            self._check_finite("gradient norm", gnorm, step)
        self.optimizer.step()
        self.scheduler.step()
        return value, gnorm, logs

    def _check_finite(self, what: str, value: float, step: int) -> None:
        if math.isfinite(value):
            return
        # Nothing is saved now: the weights in memory are the ones that produced the NaN, so the resume
        # state written before them is the last good one (only healthy states are written), left as it is.
        diverged(self.out, self.best_score, f"the {what} became {value} at step {step + 1}: training stopped before that update")

    # -- evaluate and save -----------------------------------------------------------------------
    def evaluate(self, step: int) -> None:
        if self.dist.is_main and self.evaluator is not None:
            scores = self.evaluator(self.method.encoder_for_eval(self.runner), step)
            select = self.cfg.select_on or self.evaluator.metrics[0]
            if select not in scores:
                raise EmbenchError(f"--select-on {select!r}: no such metric; the evaluation gives {', '.join(scores)}")
            score = scores[select]
            if self.initial is None and step == 0:
                self.initial = score
            # step 0 is the untrained model: logged as the initial score, but kept as the best only when asked
            # (select_initial), as the authors' trainers evaluate during training, never before it (SimCSE:
            # HF Trainer's evaluation every eval_steps)
            eligible = step > 0 or self.cfg.select_initial
            better = eligible and (self.best_score is None or score > self.best_score)
            if better:
                self.best_score, self.best_step = score, step
                self.export(self.out / checkpoints.BEST_DIR, step, {select: score})
            self.emit({"step": step, **{f"eval/{k}": v for k, v in scores.items()}, "best": better})
        distributed.barrier()

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
        if self.dist.is_main:
            self._check_weights(step)
            with writing(self.out / checkpoints.RESUME_DIR):
                checkpoints.save_resume(self.out / checkpoints.RESUME_DIR, model=self.model, optimizer=self.optimizer,
                                        scheduler=self.scheduler, step=step, extra={
                                            "best_score": self.best_score, "best_step": self.best_step,
                                            "initial_score": self.initial, "config": self.cfg.to_dict(),
                                            "data_fingerprint": self.data_fingerprint})
        distributed.barrier()

    def emit(self, rec: dict[str, Any]) -> None:
        self.history.append(rec)
        if self._log is not None:
            self._log.write(json.dumps(rec) + "\n")
            self._log.flush()
        if self._writer is not None:
            for k, v in rec.items():
                if isinstance(v, (int, float)) and k != "step":
                    self._writer.add_scalar(k, v, rec["step"])

    # -- the loop --------------------------------------------------------------------------------
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
        self._log = open(self.metrics_path, "a", encoding="utf-8") if dist.is_main else None
        self._writer = _tensorboard(self.out) if cfg.tensorboard and dist.is_main else None
        series_dir = self.out / "checkpoints"
        save_resume_every = cfg.save_steps or cfg.eval_steps or 500
        try:
            if cfg.eval_steps and self.start == 0:
                self.evaluate(0)
            self.model.train()
            last_loss = self._loop(save_resume_every, series_dir)
        finally:
            if self._log is not None:
                self._log.close()
            if self._writer is not None:
                self._writer.close()
        best = self.out / checkpoints.BEST_DIR
        finishing = dist.is_main and self.start >= self.total and not best.is_dir()
        if finishing and cfg.eval_steps:
            finish_export(self, best)  # a run killed between its last checkpoint and its export: finished now
        if (dist.is_main and self.initial is not None and self.best_score is not None and self.best_score < self.initial
                and not cfg.select_initial):
            log.warning("every trained evaluation scored below the untrained model (step 0: %.4f); the kept checkpoint "
                        "is the best trained step, %d (%.4f). --set select_initial=true keeps step 0 when it scores best",
                        self.initial, self.best_step, self.best_score)
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
        window_t, window_steps = time.perf_counter(), 0
        inner = self.method.encoder_for_eval(self.model)
        tokens_before = getattr(inner, "tokens", 0)
        n_params = sum(p.numel() for p in inner.encoder.parameters())
        progress = RateProgress(cfg.progress and dist.is_main, "training", f"{cfg.method} {Path(cfg.model).name}",
                                self.total, "steps", completed=self.start, fields=("loss",))
        collapse = CollapseWatch()
        with progress:
            for step in range(self.start, self.total):
                loss, gnorm, logs = self.step(step)
                last_loss, done = loss, step + 1
                if collapse.update(loss, gnorm):
                    diverged(self.out, self.best_score, f"the run collapsed: the loss has stayed {loss:.4f} with a zero gradient norm for "
                                   f"{collapse.run} steps up to step {done} (every text gets the same vector; a "
                                   "learning rate far too high does this)", since=done - collapse.run)
                window_steps += 1
                progress.advance(loss=f"{loss:.4f}")
                if done % cfg.log_steps == 0 or done == self.total:
                    dt = max(time.perf_counter() - window_t, 1e-9)
                    tokens = (getattr(inner, "tokens", 0) - tokens_before) * dist.world_size
                    tps = tokens / dt
                    self.emit({"step": done, "loss": loss, "lr": self.scheduler.get_last_lr()[0], "grad_norm": gnorm,
                               **logs, "steps_per_s": window_steps / dt, "tokens_per_s": tps,
                               # 6 N FLOPs per token (forward + backward): model FLOPs, for MFU against the GPU's peak
                               "model_tflops_per_s": 6 * n_params * tps / 1e12})
                    window_t, window_steps, tokens_before = time.perf_counter(), 0, getattr(inner, "tokens", 0)
                if cfg.eval_steps and (done % cfg.eval_steps == 0 or done == self.total):
                    self.evaluate(done)
                if cfg.save_every and done % cfg.save_every == 0 and dist.is_main:
                    self.export(series_dir / f"step-{done:06d}", done)
                if done % save_resume_every == 0 or done == self.total:
                    self.save_resume(done)
                if window_steps == 0:  # speed is measured on training steps only, not evaluation or saving
                    window_t, tokens_before = time.perf_counter(), getattr(inner, "tokens", 0)
        return last_loss


def train(cfg: TrainConfig) -> TrainResult:
    """Train ``cfg.method`` and keep the best checkpoint.

    >>> from embench.train import make_config, train
    >>> r = train(make_config(recipe="crop", model="all-MiniLM-L6-v2", max_steps=200, out="runs/crop"))  # doctest: +SKIP
    >>> r.best_dir                                                                                   # doctest: +SKIP
    """
    return Trainer(cfg).fit()


def _seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _tensorboard(out: Path):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise EmbenchError("--tensorboard needs the tensorboard package (pip install tensorboard)") from None
    return SummaryWriter(str(out / "tensorboard"))
