"""One recipe under several training seeds: ``OUT/seed-<s>`` each, listed in ``OUT/seeds.json`` as one model.

Papers in this field report one seed; SimCSE's reproductions spread over 2.5 points (princeton-nlp/SimCSE
issues 53, 90, 246). Running a recipe under seeds 1-5 and reading the folder as a seed group gives
its mean and spread (``embench run``) and a t-test against a baseline (``embench compare``).
Seeds run one after another; a seed already finished is kept, so an interrupted series resumes.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from ..evaluation.seed_groups import SEED_GROUP_FILE, read_seed_group, write_seed_group
from . import checkpoints
from .config import TrainConfig
from .footprint import drop_resume_state, folder_parts
from .trainer import Trainer, TrainResult

log = logging.getLogger(__name__)


def seed_folders(out: str | Path, seeds: Sequence[int]) -> dict[int, Path]:
    """Where each seed's run goes: ``OUT/seed-<s>`` (what ``--show`` lists and :func:`train_seeds` writes)."""
    return {s: Path(out) / f"seed-{s}" for s in seeds}


def train_seeds(cfg: TrainConfig, seeds: Sequence[int],
                on_seed: Callable[[int, TrainResult | None, Path], None] | None = None) -> dict[int, Path]:
    """Train ``cfg`` once per seed into ``cfg.out/seed-<s>``; returns seed -> kept model folder."""
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    group = read_seed_group(out) if (out / SEED_GROUP_FILE).is_file() else None
    members = dict(group.members) if group else {}
    shared = {k: v for k, v in cfg.to_dict().items() if k not in ("seed", "out")}
    for seed, member in seed_folders(out, seeds).items():
        if seed in members:
            log.info("seed %d is already trained (%s); kept", seed, members[seed])
            if on_seed:
                on_seed(seed, None, members[seed])
            continue
        # --resume continues the seed that was interrupted; seeds never started begin afresh
        resume = bool(cfg.resume) and (member / checkpoints.RESUME_DIR / "state.pt").is_file()
        result = Trainer(dataclasses.replace(cfg, seed=seed, out=str(member), resume=resume)).fit()
        members[seed] = result.best_dir
        if result.footprint is not None:  # the main process (the others measure nothing)
            # a finished seed is never resumed (it is skipped above): its resume state, the weights and the
            # optimiser's moments (3x the model), would only double or treble every seed folder
            freed = drop_resume_state(member)
            result.footprint = dataclasses.replace(result.footprint, parts=folder_parts(member), dropped_resume=freed)
        write_seed_group(out, members, shared)  # after every seed: an interrupted series keeps what finished
        if on_seed:
            on_seed(seed, result, result.best_dir)
    return members
