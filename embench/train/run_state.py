"""A training run's state on disk: resuming it (the same run, or refused; this run's optimiser options win),
finishing a cut export, writing checkpoints (a failed write is one error), and the fingerprint of its data."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from ..core.atomic import output_errors, write_text
from ..core.errors import EmbenchError
from ..data.training_sets import read_differently_before
from . import checkpoints
from .rank_rng import restore_rng_states

log = logging.getLogger(__name__)


@contextlib.contextmanager
def writing(folder: Path):
    """A checkpoint that cannot be written (a full disk, a read-only --out) is one error; the previous one stays."""
    try:
        yield
    except OSError as e:
        raise EmbenchError(f"could not write {folder} ({e.strerror or e}); the checkpoint written before it is kept: "
                           "free space (or choose another --out) and run the same command with --resume") from None


def data_fingerprint(examples: Any) -> str:
    """sha256 over the training examples in order (one pass, no copy of the data)."""
    h = hashlib.sha256()
    # a list of examples, or an object holding them (the crop corpus: its documents' chunks)
    for ex in examples if hasattr(examples, "__iter__") else sorted(vars(examples).items()):
        h.update(repr(ex).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:16]


def logged_step(line: str) -> int | None:
    """The step of a metrics.jsonl line, or None for a blank or torn one."""
    try:
        return int(json.loads(line)["step"])
    except (ValueError, KeyError, TypeError):
        return None


def resume_state(trainer: Any) -> None:
    """Load ``trainer``'s resume checkpoint into its (set-up) model, optimiser and schedule, after checking it
    is this run: its options (checkpoints.check_compatible) and its training examples."""
    state = checkpoints.load_resume(trainer.out / checkpoints.RESUME_DIR)
    for note in checkpoints.check_compatible(state.get("config", {}), trainer.cfg):
        log.warning("%s", note)
    saved_data = state.get("data_fingerprint")
    if saved_data is not None and saved_data != trainer.data_fingerprint:
        raise EmbenchError("--resume: the training examples differ from the checkpoint's (another file, another "
                           f"--max-examples, or the file was edited{_read_differently(trainer)}); resume on the same "
                           "data, or train into another --out")
    trainer.model.load_state_dict(state["model"])
    trainer.optimizer.load_state_dict(state["optimizer"])
    trainer.scheduler.load_state_dict(state["scheduler"])
    if "grad_scaler" in state and trainer.scaler.is_enabled():  # fp16's loss scale goes on from where it was
        trainer.scaler.load_state_dict(state["grad_scaler"])
    take_new_optimiser_options(trainer.optimizer, trainer.scheduler, trainer.cfg, state.get("config", {}))
    restore_rng_states(state, trainer.dist, trainer.cfg.seed, state["step"])  # each process its own
    trainer.start, trainer.best_score = state["step"], state.get("best_score")
    # without evaluation the kept checkpoint is the last step: a finished run resumed keeps saying so
    trainer.best_step = state.get("best_step", 0) if trainer.cfg.eval_steps else trainer.start
    trainer.initial = state.get("initial_score")
    if trainer.start > trainer.total:
        raise EmbenchError(f"--resume: the checkpoint is at step {trainer.start}, beyond this run's {trainer.total} steps")
    if trainer.dist.is_main and trainer.metrics_path.is_file():
        trim_metrics(trainer.metrics_path, trainer.start)


def _read_differently(trainer: Any) -> str:
    """The other cause of other examples from a file whose bytes are as they were: embench reading its lines anew."""
    files = read_differently_before(list(trainer.cfg.data or []), trainer.root)
    if not files:
        return ""
    return (f"; or, if {files[0]} is unchanged since the run began, this embench reads it differently: it holds line "
            "separators (U+2028, U+0085, a form feed, ...) that ended a line before 2026-11-29; since then only \\n, "
            "\\r\\n and \\r end one, as SimCSE's loader reads it")


def trim_metrics(path: Path, step: int) -> None:
    """Keep the log lines up to ``step`` (the steps after the checkpoint are redone); a torn line is dropped."""
    lines = [x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    if any(logged_step(x) is None for x in lines):
        log.warning("--resume: %s had a torn line (a run killed while writing it); it is dropped", path)
    kept = "".join(x + "\n" for x in lines if (s := logged_step(x)) is not None and s <= step)
    with output_errors(path, "--resume:"):  # whole or not at all: a kill or a full disk here keeps the old log
        write_text(path, kept)


def take_new_optimiser_options(optimizer: Any, scheduler: Any, cfg: Any, saved: dict[str, Any]) -> None:
    """Loading the optimiser brings back the old lr and weight decay; this run's options win, so that
    "lower --lr and resume" works after a divergence. Each change is said."""
    groups = optimizer.param_groups
    for key in ("lr", "weight_decay"):
        new = getattr(cfg, key)
        if saved.get(key) is None or saved[key] == new:
            continue
        log.warning("--resume: %s %r from this run's options (the checkpoint was trained with %r)", key, new, saved[key])
        for group, fn in zip(groups, scheduler.lr_lambdas, strict=True):
            if key == "lr":  # the schedule goes on from its step, scaled to the new peak
                group["initial_lr"], group["lr"] = new, new * fn(scheduler.last_epoch)
            else:
                group[key] = new
        if key == "lr":
            scheduler.base_lrs = [new] * len(groups)
            scheduler._last_lr = [g["lr"] for g in groups]


def finish_export(trainer: Any, best: Path) -> None:
    """The best checkpoint of a run whose steps are all done but whose export was cut: the last step's
    weights (in the resume state) when the last step was the best, else the complete copy the cut
    export had set aside."""
    old = best.with_name(best.name + ".old")
    if trainer.best_step == trainer.total:
        trainer.export(best, trainer.total, {"selected": "best (finished on --resume)"})
    elif old.is_dir():
        old.rename(best)
    else:
        raise EmbenchError(f"--resume: every step is done but {best} is missing, and the best step ({trainer.best_step}) "
                           "is not the last one, whose weights are the only ones kept; train again into another --out")
    log.warning("--resume: the run had finished its steps; its best checkpoint %s is now written", best)
