"""A new run into a folder that already holds a run: refused, or with ``--overwrite`` that run's outputs cleared first.

Left as they were, the new run would rewrite ``train_config.json`` and ``metrics.jsonl`` while the old run's
``best/``, ``checkpoint-last/`` and series folders stayed: ``checkpoints/step-000002`` of the old run beside
``step-000001`` of the new one read as one trajectory (``embench analyze ... -m OUT/checkpoints``), and an old best
could stand as the new run's. Hugging Face's ``Trainer`` refused a non-empty output folder the same way
(``overwrite_output_dir``). ``--resume`` continues the run that is there (``run_state.resume_state``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ..core.errors import EmbenchError
from . import checkpoints
from .out_lock import check_out_folder

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
        raise EmbenchError(f"--out {out} holds {describe(out)} ({names}): continue it with --resume, start again with "
                           "--overwrite (these are removed first), or train into another --out")
    for p in found if clear else ():
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    return True
