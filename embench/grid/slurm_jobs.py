"""Which Slurm job holds which cells, and that job's state as Slurm tells it (sacct, or squeue: ``slurm_states.py``).

Each submission writes ``<results>/.grid/slurm/submitted/<job>.json``: the Slurm id of the array task that runs
grid job ``<job>``, its cells and submitit's folder. ``embench grid status`` and the planning of a re-run read
the states of those jobs: a cell whose job is pending or running is not submitted again, a cell left without a
record says how its job ended (CANCELLED, TIMEOUT, FAILED, ...), and a cell whose job's state neither sacct nor
squeue can tell is ``unknown``: not submitted again, since its job may still run it.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.atomic import write_text
from .slurm_states import ACTIVE, ENDED, UNKNOWN, job_states
from .state import Cell, GridState, read_json

_SLURM_ID = re.compile(r"\d+(_\d+)?")  # a job's, or an array task's


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


def with_job_states(states: dict[str, dict[str, Any]], results: Path | str) -> dict[str, dict[str, Any]]:
    """The cell states of ``status.cell_state`` corrected by the states of their Slurm jobs: a cell whose job is
    pending or running is ``running`` (so a re-run does not submit it twice); once it has ended, a ``running`` marker
    that job wrote is ``missing``, and so is one an earlier Slurm job wrote that has ended too (it died on its node);
    one a later Slurm job wrote stays ``running`` while that job is pending or running, a local job's stays; a cell
    whose job's state is unknown is ``unknown`` (unless a live marker says running); every cell not done names its
    job and the job's state."""
    open_cells = [cid for cid, st in states.items() if st["state"] != "done"]
    if not open_cells:
        return states
    held = holders(results)
    subs = {cid: held[cid] for cid in open_cells if cid in held}
    if not subs:
        return states
    # a marker another Slurm job left (one that died on its node before the latest submission) is asked about in the
    # same call: once that job has ended, its marker holds the cell for nobody
    markers = {cid: m for cid in subs if states[cid]["state"] == "running" and (m := _marker_job(states[cid]))}
    now = job_states([s["slurm_job"] for s in subs.values()] + list(markers.values()))
    out = dict(states)
    for cid, sub in subs.items():
        job, slurm = sub["slurm_job"], now.get(sub["slurm_job"], UNKNOWN)
        st = dict(states[cid], slurm_job=job, slurm_state=slurm)
        if slurm == UNKNOWN:
            # not "missing": a job that cannot be ruled out may still run its cells (a requeued one its failed ones)
            if st["state"] != "running":
                st["state"] = "unknown"
            st["note"] = f"Slurm job {job}: state unknown (neither sacct nor squeue answered)"
        elif slurm in ACTIVE:
            st.update(state="running", job=st.get("job") or job)
            st["note"] = f"Slurm job {job} {slurm}"
        else:
            st["note"] = f"Slurm job {job} {_how(slurm)}"
            marked = markers.get(cid)
            if st["state"] == "running" and marked == str(job):  # its marker was left by a process Slurm has ended
                st["state"] = "missing"
            elif st["state"] == "running" and marked and now.get(marked, UNKNOWN) not in ACTIVE | {UNKNOWN}:
                st["state"] = "missing"  # an earlier Slurm job's marker (it died on its node), and that job has ended
                st["note"] += f"; its running marker is Slurm job {marked}'s, which {_how(now[marked])}"
        out[cid] = st
    return out


def _how(slurm: str) -> str:
    return "ended (squeue no longer lists it; sacct cannot say how)" if slurm == ENDED else f"ended {slurm}"


def _marker_job(st: dict[str, Any]) -> str | None:
    """The Slurm array task that wrote the ``running`` marker of a cell; None for a job Slurm did not run (a local one,
    under the same grid job name, whose host and pid ``status.cell_state`` checks): the marker names its array task's
    id; one from an embench that wrote no id is that task's when its log is in submitit's folder of that task
    (``slurm/12_3/``)."""
    log = Path(str(st.get("log") or ""))
    job = str(st.get("marker_slurm_job") or (log.parent.name if log.parent.parent.name == "slurm" else ""))
    # only a Slurm id (``12`` or ``12_3``) is asked about: any other folder name under a ``slurm`` folder made the one
    # sacct call for every job fail, and each job then read ENDED (its running cells "missing")
    return job if _SLURM_ID.fullmatch(job) else None
