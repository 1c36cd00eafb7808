"""Which Slurm job trains which seed of a group: ``OUT/slurm/submitted/seed-<s>.json`` (its array task's id), so
that a group submitted again while its array runs leaves out the seeds whose job is pending or running. A second
task on the same ``OUT/seed-<s>`` would only fail on the first one's lock; a job whose state neither sacct nor
squeue can tell is left out too (it may still be training), and said.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.atomic import write_text
from ..grid.slurm_states import ACTIVE, UNKNOWN, job_states
from ..grid.state import read_json


def record_path(out: Path | str, seed: int) -> Path:
    return Path(out) / "slurm" / "submitted" / f"seed-{seed}.json"


def record(out: Path | str, seeds: Sequence[int], jobs: Sequence[Any]) -> None:
    """Note each submitted seed's Slurm id (the latest submission of a seed wins)."""
    for seed, job in zip(seeds, jobs, strict=True):
        write_text(record_path(out, seed), json.dumps({"slurm_job": str(job.job_id), "seed": seed, "time": time.time()}) + "\n")


def held_seeds(out: Path | str, seeds: Sequence[int] | None = None) -> dict[int, tuple[str, str]]:
    """seed -> (its Slurm job, that job's state) for each of ``seeds`` (None: every seed submitted into ``out``)
    whose latest job is pending or running, or in a state that cannot be told (``UNKNOWN``)."""
    if seeds is None:
        folder = record_path(out, 0).parent
        found = [read_json(p) for p in folder.glob("seed-*.json")] if folder.is_dir() else []
    else:
        found = [read_json(record_path(out, s)) for s in seeds]
    subs = {int(sub["seed"]): str(sub["slurm_job"]) for sub in found if sub and "seed" in sub and sub.get("slurm_job")}
    now = job_states(subs.values()) if subs else {}
    return {s: (job, now[job]) for s, job in sorted(subs.items()) if now[job] in ACTIVE or now[job] == UNKNOWN}


def describe(seed: int, job: str, state: str, out: Path | str) -> str:
    """One line saying why a seed is not submitted again."""
    if state == UNKNOWN:
        return (f"seed {seed}: not submitted again: neither sacct nor squeue can tell the state of its Slurm job {job}, "
                f"which may still be training it (once that job is known to have ended, delete {record_path(out, seed)})")
    return f"seed {seed}: not submitted again: its Slurm job {job} is {state}"
