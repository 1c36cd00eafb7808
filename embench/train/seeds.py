"""One recipe under several training seeds: ``OUT/seed-<s>`` each, listed in ``OUT/seeds.json`` as one model.

Papers in this field report one seed; SimCSE's reproductions spread over 2.5 points (princeton-nlp/SimCSE
issues 53, 90, 246). Running a recipe under seeds 1-5 and reading the folder as a seed group gives
its mean and spread (``embench run``) and a t-test against a baseline (``embench compare``).
Seeds run one after another here, or as one Slurm array task each (:func:`submit_seeds`); a seed
already finished is kept, so an interrupted series resumes, and a seed requeued after its time limit
continues from its last checkpoint.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..core.boundary import command_line
from ..core.errors import EmbenchError
from ..evaluation.seed_groups import SEED_GROUP_FILE, read_seed_group, write_seed_group
from . import checkpoints
from .config import TrainConfig
from .footprint import drop_resume_state, folder_parts
from .out_lock import check_out_folder
from .previous_run import clear_or_refuse, refuse_if_kept, refuse_unfinished_seed
from .trainer import Trainer, TrainResult

try:
    import submitit
except ImportError:  # an optional extra: only `--executor slurm` needs it
    submitit = None

log = logging.getLogger(__name__)
GROUP_LOCK = ".seeds.lock"


def seed_folders(out: str | Path, seeds: Sequence[int]) -> dict[int, Path]:
    """Where each seed's run goes: ``OUT/seed-<s>`` (what ``--show`` lists and :func:`train_seeds` writes)."""
    return {s: Path(out) / f"seed-{s}" for s in seeds}


def finished_seeds(out: str | Path, say: bool = False) -> dict[int, Path]:
    """The seeds of ``OUT/seeds.json`` (none when there is no group yet). A seed whose folder is gone is left out, not
    an error: ``--seeds`` then trains it again, as it trains any seed not finished (``say``: warned about, once)."""
    group = read_seed_group(out, lenient=True) if (Path(out) / SEED_GROUP_FILE).is_file() else None
    if group is None:
        return {}
    if say and group.missing:
        log.warning("%s: the folder of seed(s) %s is gone (%s): left out of the group; --seeds with them trains them "
                    "again", Path(out) / SEED_GROUP_FILE, ", ".join(map(str, group.missing)),
                    ", ".join(map(str, group.missing.values())))
    return dict(group.members)


def add_to_group(out: Path, seed: int, kept: Path, shared: dict[str, Any]) -> None:
    """Add one finished seed to ``OUT/seeds.json``, read and written under a lock: the array tasks of one group
    finish at once, and each must add its seed to what the others wrote, not to what it read before."""
    with open(out / GROUP_LOCK, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes
        write_seed_group(out, {**finished_seeds(out), seed: kept}, shared)


# how a run goes or reports, not what it trains: a seed may be added under other values of these
RUN_ONLY = frozenset({"seed", "out", "resume", "overwrite", "progress", "log_steps", "tensorboard", "device", "compile",
                      "data_root", "save_steps", "save_every", "eval_batch_size", "auto_fit", "bucket_tokens",
                      "bucket_min_tokens", "group_by_length", "unpadded", "grad_accumulation", "gradient_checkpointing"})


def check_same_options(out: Path, cfg: TrainConfig) -> None:
    """A seed added to a group is trained as its seeds were: other options (``--lr``, ``--max-steps``, ...) would mix
    two recipes in one mean, and ``seeds.json`` would say every seed had the new ones. Refused, naming them."""
    try:
        before = json.loads((out / SEED_GROUP_FILE).read_text(encoding="utf-8")).get("config") or {}
    except (OSError, ValueError):
        return  # no group yet (an unreadable one is named where it is read)
    given = cfg.to_dict()
    before_resolved, now_resolved = _resolved(before), _resolved(given)
    if before_resolved is None or now_resolved is None:  # compared as written both, never raw against resolved
        before, now = _flat(json.loads(json.dumps(before, default=str))), _flat(json.loads(json.dumps(given, default=str)))
    else:
        before, now = _flat(before_resolved), _flat(now_resolved)
    changed = [f"{k}={now[k]!r} (the group's seeds: {before[k]!r})" for k in sorted(before.keys() & now.keys())
               if k not in RUN_ONLY and before[k] != now[k]]
    if changed:
        raise EmbenchError(f"--out {out} holds a seed group trained with other options; this run has {'; '.join(changed)}. "
                           "Add seeds with the group's options, train every seed again with --overwrite, or train into "
                           "another --out")


def _resolved(config: dict[str, Any]) -> dict[str, Any] | None:
    """A configuration as the run trains it: seeds.json keeps the options as given, so ``--set mlm_weight=0.0`` (the
    default) differed from a group that left it out. Resolved (``resolve``: method defaults and fallbacks filled in),
    for a seeds.json of any version too, with the run-only options at their defaults (``--tensorboard`` without its
    package fails resolving, and is said where the run starts); None where it does not resolve (a method or option
    since renamed)."""
    from .config import FIELDS
    from .resolution import resolve

    try:
        return resolve(TrainConfig(**{k: v for k, v in config.items() if k in FIELDS and k not in RUN_ONLY})).to_dict()
    except (EmbenchError, TypeError, ValueError):
        return None


def _flat(config: dict[str, Any]) -> dict[str, Any]:
    """Each method option beside the others, so that a differing one is named on its own."""
    return {**{k: v for k, v in config.items() if k != "method_options"}, **(config.get("method_options") or {})}


def train_seed(cfg: TrainConfig, seed: int) -> tuple[TrainResult | None, Path]:
    """Train ``cfg`` under ``seed`` into ``OUT/seed-<s>`` and add it to the group; (None, its folder) when that
    seed is already in the group. ``cfg.resume`` continues the seed's run where it stopped, if it started."""
    out = Path(cfg.out)
    check_out_folder(out)
    out.mkdir(parents=True, exist_ok=True)
    check_same_options(out, cfg)
    done = finished_seeds(out)
    if seed in done:
        log.info("seed %d is already trained (%s); kept", seed, done[seed])
        return None, done[seed]
    member = seed_folders(out, [seed])[seed]
    refuse_unfinished_seed(out, seed, member, cfg)  # before the seed's Trainer, whose refusal names its folder as --out
    # --resume continues the seed that was interrupted; a seed never started, or stopped before its first resume
    # checkpoint, begins afresh (what it left is cleared: previous_run.py)
    resume = bool(cfg.resume) and checkpoints.resumable(member)
    if cfg.resume and not resume:  # a trained seed outside the group (its resume state gone) is not cleared unasked
        refuse_if_kept(member, cfg, again=f"remove {member} to train seed {seed} again (--overwrite trains every seed again)")
    overwrite = (cfg.overwrite or cfg.resume) and not resume
    result = Trainer(dataclasses.replace(cfg, seed=seed, out=str(member), resume=resume, overwrite=overwrite)).fit()
    # in the group before its resume state goes: a stop between the two leaves a kept seed, not one with neither
    add_to_group(out, seed, result.best_dir, {k: v for k, v in cfg.to_dict().items() if k not in ("seed", "out")})
    if result.footprint is not None:  # the main process (the others measure nothing)
        # a finished seed is never resumed (it is skipped above): its resume state, the weights and the
        # optimiser's moments (3x the model), would only double or treble every seed folder
        freed = drop_resume_state(member)
        result.footprint = dataclasses.replace(result.footprint, parts=folder_parts(member), dropped_resume=freed)
    return result, result.best_dir


def train_seeds(cfg: TrainConfig, seeds: Sequence[int],
                on_seed: Callable[[int, TrainResult | None, Path], None] | None = None) -> dict[int, Path]:
    """Train ``cfg`` once per seed into ``cfg.out/seed-<s>``, one after another; returns seed -> kept model folder."""
    members: dict[int, Path] = {}
    if cfg.overwrite:  # every seed again, none kept
        clear_or_refuse(Path(cfg.out), cfg)
    finished_seeds(cfg.out, say=True)  # a seed whose folder was removed: said once here, not at every seed
    for seed in seeds:
        result, members[seed] = train_seed(cfg, seed)  # the group is written after every seed: a stop keeps them
        if on_seed:
            on_seed(seed, result, members[seed])
    return {**finished_seeds(cfg.out), **members}


class SeedJob(submitit.helpers.Checkpointable if submitit is not None else object):  # type: ignore[misc]
    """One seed as a submitit job: stopped by SIGTERM as on Ctrl-C (its last checkpoint kept), requeued after its
    time limit to continue from that checkpoint."""

    def __call__(self, cfg: TrainConfig, seed: int) -> str:
        from ..grid.job_signals import stop_on_sigterm
        from ..grid.slurm import job_environment, use_allotted_cpus

        env = job_environment()
        use_allotted_cpus()
        ended = command_line()  # submitted by `embench train --seeds`: its errors say that command's options
        with stop_on_sigterm(submitit.JobEnvironment.USR_SIG if env is not None else None) as stop:
            try:
                _, kept = train_seed(cfg, seed)
            except KeyboardInterrupt:
                if not stop.terminated:
                    raise
                print(f"seed {seed}: stopped by SIGTERM; its last checkpoint is kept in {cfg.out}/seed-{seed}: submit "
                      "the same command again (with --resume) to continue", file=sys.stderr, flush=True)
                raise SystemExit(143) from None
            except EmbenchError as e:  # said in one line, as the CLI says it; the task still ends FAILED
                print(f"seed {seed}: {e}", file=sys.stderr, flush=True)
                raise SystemExit(1) from None
            finally:
                ended()
        return str(kept)

    def checkpoint(self, cfg: TrainConfig, seed: int) -> Any:
        """submitit, at the time limit: the same seed again, resuming from its last checkpoint."""
        return submitit.helpers.DelayedSubmission(self, dataclasses.replace(cfg, resume=True), seed)


def submit_seeds(cfg: TrainConfig, seeds: Sequence[int], settings: Any = None,
                 cluster: str = "slurm") -> tuple[list[int], list[Any], dict[int, tuple[str, str]]]:
    """Submit one Slurm array task per seed neither in the group nor held by a pending or running Slurm job (through
    submitit; logs in ``OUT/slurm``); returns those seeds, their submitit jobs, and the seeds left out for their job
    (seed -> (Slurm id, its state)). ``cluster``: submitit's ``local`` runs them without Slurm."""
    from ..grid.slurm import SlurmSettings, make_executor, map_array
    from .seed_jobs import held_seeds, record

    out = Path(cfg.out)
    check_out_folder(out)
    if cfg.overwrite:  # every seed again, none kept
        live = held_seeds(out) if cluster == "slurm" else {}
        if live:  # clearing would take their folders from under them
            said = ", ".join(f"seed {s}: Slurm job {job} {state}" for s, (job, state) in live.items())
            raise EmbenchError(f"--overwrite would clear {out} while Slurm jobs may still train into it ({said}); "
                               "scancel them first, or wait until they end")
        clear_or_refuse(out, cfg)
    out.mkdir(parents=True, exist_ok=True)
    check_same_options(out, cfg)
    done = finished_seeds(out, say=True)
    todo = [s for s in seeds if s not in done]
    held = held_seeds(out, todo) if todo and cluster == "slurm" else {}
    todo = [s for s in todo if s not in held]
    if not todo:
        return [], [], held
    settings = dataclasses.replace(settings or SlurmSettings(), name="embench-train")
    jobs = map_array(make_executor(out / "slurm", settings, cluster), SeedJob(), [cfg] * len(todo), todo,
                     options="the --slurm-option values")
    if cluster == "slurm":
        record(out, todo, jobs)
    return todo, jobs, held
