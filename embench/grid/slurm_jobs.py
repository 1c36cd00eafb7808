"""Which Slurm job holds which cells, and that job's state as Slurm tells it (sacct, through submitit).

Each submission writes ``<results>/.grid/slurm/submitted/<job>.json``: the Slurm id of the array task that runs
grid job ``<job>``, its cells and submitit's folder. ``embench grid status`` and the planning of a re-run read
the states of those jobs: a cell whose job is pending or running is not submitted again, and a cell left
without a record says how its job ended (CANCELLED, TIMEOUT, FAILED, ...).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..core.atomic import write_text
from .state import Cell, GridState, read_json

# sacct's states of a job that still holds its cells (https://slurm.schedmd.com/sacct.html#SECTION_JOB-STATE-CODES)
ACTIVE = frozenset({"PENDING", "RUNNING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SUSPENDED",
                    "COMPLETING", "CONFIGURING", "SIGNALING", "STAGE_OUT"})


def submitted_dir(results: Path | str) -> Path:
    return GridState(results).root / "slurm" / "submitted"


def record(results: Path | str, job_files: Sequence[Path], jobs: Sequence[Any], folder: Path) -> None:
    """Note each submitted grid job's Slurm id beside its cells (the latest submission of a job wins)."""
    for job_file, job in zip(job_files, jobs, strict=True):
        spec = read_json(Path(job_file)) or {}
        cells = [Cell.from_dict(c).id for c in spec.get("cells", [])]
        write_text(submitted_dir(results) / f"{Path(job_file).stem}.json", json.dumps({
            "slurm_job": str(job.job_id), "cells": cells, "folder": str(folder), "time": time.time()}) + "\n")


def holders(results: Path | str) -> dict[str, dict[str, Any]]:
    """cell id -> the latest submission that holds it (``slurm_job``, ``folder``)."""
    folder = submitted_dir(results)
    found = [read_json(p) for p in folder.glob("*.json")] if folder.is_dir() else []
    out: dict[str, dict[str, Any]] = {}
    for sub in sorted((s for s in found if s), key=lambda s: s.get("time", 0)):
        for cell in sub.get("cells", []):
            out[cell] = sub
    return out


def job_states(job_ids: Iterable[str], folders: dict[str, str]) -> dict[str, str]:
    """Slurm id -> its state now (PENDING, RUNNING, COMPLETED, CANCELLED, TIMEOUT, ...), from one sacct call
    through submitit; empty where there is no sacct (a machine outside the cluster) or no submitit."""
    ids = sorted(set(job_ids))
    if not ids or shutil.which("sacct") is None:
        return {}
    try:
        import submitit
    except ImportError:
        return {}
    jobs = [submitit.SlurmJob(folder=folders[i], job_id=i) for i in ids]
    jobs[0].get_info(mode="force")  # one sacct for every registered job: the others read its answer
    return {j.job_id: _first_word(j.watcher.get_state(j.job_id, mode="cache")) for j in jobs}


def _first_word(state: str) -> str:
    return (state or "UNKNOWN").split()[0].upper()  # "CANCELLED by 0" -> CANCELLED


def with_job_states(states: dict[str, dict[str, Any]], results: Path | str) -> dict[str, dict[str, Any]]:
    """The cell states of ``status.cell_state`` corrected by the states of their Slurm jobs: a cell whose job is
    pending or running is ``running`` (so a re-run does not submit it twice); a ``running`` marker whose job has
    ended is ``missing``; every cell not done names its job and the job's state."""
    open_cells = [cid for cid, st in states.items() if st["state"] != "done"]
    if not open_cells:
        return states
    held = holders(results)
    subs = {cid: held[cid] for cid in open_cells if cid in held}
    if not subs:
        return states
    now = job_states((s["slurm_job"] for s in subs.values()), {s["slurm_job"]: s["folder"] for s in subs.values()})
    out = dict(states)
    for cid, sub in subs.items():
        job, slurm = sub["slurm_job"], now.get(sub["slurm_job"], "UNKNOWN")
        if slurm == "UNKNOWN":
            continue
        st = dict(states[cid], slurm_job=job, slurm_state=slurm)
        if slurm in ACTIVE:
            st.update(state="running", job=st.get("job") or job)
            st["note"] = f"Slurm job {job} {slurm}"
        else:
            if st["state"] == "running":  # its marker was left by a process Slurm has ended
                st["state"] = "missing"
            st["note"] = f"Slurm job {job} ended {slurm}"
        out[cid] = st
    return out
