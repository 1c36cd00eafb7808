"""A new run into a folder that already holds a run: refused, or with ``--overwrite`` that run's outputs cleared first.

Left as they were, the new run would rewrite ``train_config.json`` and ``metrics.jsonl`` while the old run's
``best/``, ``checkpoint-last/`` and series folders stayed: ``checkpoints/step-000002`` of the old run beside
``step-000001`` of the new one read as one trajectory (``embench analyze ... -m OUT/checkpoints``), and an old best
could stand as the new run's. Hugging Face's ``Trainer`` refused a non-empty output folder the same way
(``overwrite_output_dir``). ``--resume`` continues the run that is there (``run_state.resume_state``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
from pathlib import Path
from typing import Any

from ..core.errors import EmbenchError
from . import checkpoints
from .out_lock import check_out_folder

log = logging.getLogger(__name__)

# what a run writes into its --out (trainer.py, callbacks.py, seeds.py); nothing else there is touched
RUN_FILES = ("train_config.json", "metrics.jsonl", "seeds.json")
RUN_FOLDERS = (checkpoints.BEST_DIR, checkpoints.RESUME_DIR, "checkpoints", "evals", "tensorboard")


def run_outputs(out: Path) -> list[Path]:
    """The outputs of an earlier run in ``out`` (its seed runs' folders included), in a fixed order."""
    if not out.is_dir():
        return []
    found = [out / n for n in (*RUN_FILES, *RUN_FOLDERS) if (out / n).exists()]
    seeds = sorted(p for p in out.glob("seed-*") if p.is_dir() and run_outputs(p))
    return found + seeds


def describe(out: Path) -> str:
    """What the earlier run was, from its ``train_config.json`` where it has one."""
    try:
        cfg = json.loads((out / "train_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "a run"
    what = cfg.get("recipe") or cfg.get("method")
    steps = cfg.get("resolved_total_steps")
    return f"a run of {what}" + (f" ({steps} steps) on {cfg.get('model')}" if steps else f" on {cfg.get('model')}")


def kept_models(out: Path) -> list[Path]:
    """The models a run in ``out`` exported: ``best/`` (or ``best.old/``, the whole copy a cut export set aside:
    ``core.atomic.replace_folder``) and the series ``checkpoints/step-*``, each a loadable folder with its
    ``embench_training.json`` and model card. A run stopped before its first resume state has none of these
    unless an evaluation or ``--save-every`` came first."""
    found = [out / n for n in (checkpoints.BEST_DIR, checkpoints.BEST_DIR + ".old") if (out / n).is_dir()]
    series = out / "checkpoints"
    return found + (sorted(p for p in series.glob("step-*") if p.is_dir()) if series.is_dir() else [])


def refuse_if_kept(out: Path, cfg: Any, again: str = "--overwrite trains it again from step 0 (removing them)") -> None:
    """``--resume`` with no resume state where ``out`` holds trained models: an error, as it was before ``--resume``
    learnt to start afresh. Such a run is finished (``checkpoint-last/`` removed once final, as ``footprint.describe``
    suggests) or has checkpoints; starting it afresh would delete them. ``--overwrite`` says that is meant."""
    kept = [] if cfg.overwrite else kept_models(out)
    if kept:
        names = ", ".join(str(p.relative_to(out)) + "/" for p in kept[:3]) + (f" and {len(kept) - 3} more" if len(kept) > 3 else "")
        raise EmbenchError(f"--resume: no checkpoint at {out / checkpoints.RESUME_DIR / 'state.pt'} to continue from, and "
                           f"{out} holds {describe(out)} that finished or has checkpoints ({names}): --resume does not "
                           f"start it again, which would remove them; {again}, or train into another --out")


def resume_or_start_afresh(out: Path, cfg: Any, say: bool = True) -> Any:
    """``cfg``, or where it asks to ``--resume`` a run that left no resume state (stopped before its first
    checkpoint, every ``save_steps``; or never started) ``cfg`` as a new run that first removes what that run left,
    with a note: there is nothing to continue from, and refusing sent the user round to ``--overwrite``. A run that
    kept a model (``best/``, series checkpoints) is refused instead (:func:`refuse_if_kept`). A seed of ``--seeds``
    starts afresh the same way (``seeds.train_seed``); a seed group in ``out`` is refused."""
    if not cfg.resume:
        return cfg
    if checkpoints.resumable(out):
        return as_started(out, cfg, say)
    found = run_outputs(out)
    if any(p.name == "seeds.json" or p.name.startswith("seed-") for p in found):
        raise EmbenchError(f"--resume: {out} holds a seed group (seeds.json, seed-N/): continue it with the same --seeds "
                           "and --resume")
    refuse_if_kept(out, cfg)
    if say:
        left = f"; what it left is removed first ({', '.join(p.name for p in found)})" if found else ""
        log.warning("--resume: %s has no resume checkpoint yet (%s/state.pt: the run stopped before its first, or "
                    "never started): nothing to continue from, so the run starts from step 0%s", out,
                    checkpoints.RESUME_DIR, left)
    return dataclasses.replace(cfg, resume=False, overwrite=bool(found))


# options an earlier embench had no key for, with the behaviour it had: a run it started and this one resumes keeps
# that behaviour (its train_config.json lacks the key), so its steps stay those it was laid out with
BEFORE_THE_OPTION = {"drop_last": (True, "an epoch's last, smaller batch left out, as embench did before the option")}


def as_started(out: Path, cfg: Any, say: bool = True) -> Any:
    """``cfg`` to resume the run in ``out`` with, where its ``train_config.json`` predates an option of
    ``BEFORE_THE_OPTION``: that option as the run was started with it, said once. An option the file holds is checked
    against the checkpoint's as every other (``checkpoints.check_compatible``)."""
    try:
        started = json.loads((out / "train_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return cfg
    if not isinstance(started, dict):
        return cfg
    old = {key: value for key, (value, _) in BEFORE_THE_OPTION.items() if key not in started and getattr(cfg, key) != value}
    for key in old if say else ():
        log.warning("--resume: %s was started before the option %s existed: it goes on with %s=%s (%s)", out, key, key,
                    old[key], BEFORE_THE_OPTION[key][1])
    return dataclasses.replace(cfg, **old) if old else cfg


def clear_or_refuse(out: Path, cfg: Any, clear: bool = True) -> bool:
    """Before a run that does not resume (``cfg.resume``): an earlier run's outputs in ``out`` are an error, or with
    ``cfg.overwrite`` removed (only those: any other file in ``out`` stays) where ``clear`` (the main process).
    True once done."""
    check_out_folder(out)  # in every process (the main one also says it when taking the lock)
    found = [] if cfg.resume else run_outputs(out)
    if not found:
        return True
    if not cfg.overwrite:
        names = ", ".join(p.name + ("/" if p.is_dir() else "") for p in found)
        go_on = ("continue it with --resume, start again with --overwrite" if checkpoints.resumable(out) else
                 f"it has no resume checkpoint ({checkpoints.RESUME_DIR}/state.pt) to continue from: start it again "
                 "with --overwrite or --resume")
        raise EmbenchError(f"--out {out} holds {describe(out)} ({names}): {go_on} (these are removed first), or train "
                           "into another --out")
    for p in found if clear else ():
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    return True


def refuse_unfinished_seed(group: Path, seed: int, member: Path, cfg: Any) -> None:
    """A seed of ``--seeds`` not in the group whose folder holds a run, under neither ``--resume`` nor ``--overwrite``:
    refused as :func:`clear_or_refuse` refuses a run, in the group's words. Its words named ``--out GROUP/seed-N``,
    which the user never gave, and said ``--overwrite`` as if it started that seed alone: it trains every seed again."""
    found = [] if cfg.resume or cfg.overwrite else run_outputs(member)
    if not found:
        return
    names = ", ".join(p.name + ("/" if p.is_dir() else "") for p in found)
    if checkpoints.resumable(member):
        go_on = "continue it with --resume (the same command; the finished seeds are kept)"
    elif kept_models(member):  # --resume refuses to remove the models it kept (refuse_if_kept)
        go_on = f"it has no resume checkpoint to continue from: remove {member} to train seed {seed} again"
    else:
        go_on = "it has no resume checkpoint to continue from: --resume trains the seed again from step 0"
    raise EmbenchError(f"--out {group}: seed {seed} ({member}) holds an unfinished run ({names}): {go_on}; "
                       "--overwrite trains every seed of the group again, or train into another --out")
