"""The state of each cell of a grid, and the status table.

done: its record is in the results folder (whatever wrote it: a grid job, ``embench run``, an older
embench whose record still checks out). running: a live job holds it (a marker from this machine
with a live process, or from another machine, whose processes this one cannot see; or a Slurm job that
is pending or running). failed: its job wrote why, and the log. missing: anything else, a killed job's
cells included. unknown: a Slurm job holds it whose state neither sacct nor squeue can tell (it may still run
it, so a re-run leaves it). A cell a Slurm job held also names that job and its state (``slurm_jobs.py``).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import EmbenchError
from ..core.processes import process_alive
from ..evaluation.results import ResultStore
from .state import Cell, GridState

STATES = ("done", "running", "failed", "missing", "unknown")


def cell_state(cell: Cell, store: ResultStore, state: GridState) -> dict[str, Any]:
    if store.find(cell.model, cell.task, cell.key, cell.folder) is not None:
        return {"state": "done"}
    marker = state.marker(cell) or {}
    if marker.get("state") == "running":
        here = marker.get("host") == socket.gethostname()
        if not here or process_alive(int(marker.get("pid", 0))):
            # the Slurm array task that wrote it, if one did: a Slurm job that ended ends only its own markers
            return {"state": "running", "job": marker.get("job"), "log": marker.get("log"), "host": marker.get("host"),
                    "marker_slurm_job": marker.get("slurm_job")}
        return {"state": "missing", "note": f"its job {marker.get('job')} stopped without a word (killed?)",
                "log": marker.get("log")}
    if marker.get("state") == "failed":
        return {"state": "failed", "job": marker.get("job"), "log": marker.get("log"), "error": marker.get("error")}
    return {"state": "missing"}


def cell_states(cells: Sequence[Cell], store: ResultStore, state: GridState) -> dict[str, dict[str, Any]]:
    """Each cell's state; where a Slurm job holds a cell not done, as that job's state in Slurm says."""
    from .slurm_jobs import with_job_states

    return with_job_states({c.id: cell_state(c, store, state) for c in cells}, state.results)


def grid_cells(results: Path | str) -> list[Cell]:
    """Every cell of every grid submitted into ``results`` (from the plans kept there; no model is loaded). A later
    plan's cell of a model (under the same options), task and protocol supersedes an earlier plan's: the model's
    weights changed since (a repaired file, a retrained folder), so its record key did, and the older cell's failure
    is no longer its state."""
    state = GridState(results)
    state.check_format()
    seen: dict[str, Cell] = {}
    for plan in state.plans():  # oldest first
        options = {k: v for k, v in ((plan.get("spec") or {}).get("model_options") or {}).items() if k != "device"}
        for raw in plan.get("cells", []):
            cell = Cell.from_dict(raw)
            seen[json.dumps([cell.model, options, cell.task, cell.protocol], sort_keys=True, default=str)] = cell
    return list(seen.values())


def status_frame(cells: Sequence[Cell], states: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """One row per cell that is not done (model, task, protocol, state, log, why), done cells last as a count."""
    rows = [{"model": c.model, "task": c.task, "protocol": c.label, "state": states[c.id]["state"],
             "log": states[c.id].get("log") or "", "why": _why(states[c.id])}
            for c in cells if states[c.id]["state"] != "done"]
    return pd.DataFrame(rows, columns=["model", "task", "protocol", "state", "log", "why"])


def _why(st: dict[str, Any]) -> str:
    """The error a cell failed with and what its Slurm job did (e.g. "stopped by SIGTERM; Slurm job 12_1 ended CANCELLED")."""
    return "; ".join(x for x in (st.get("error"), st.get("note")) if x)


def summary(states: dict[str, dict[str, Any]]) -> dict[str, int]:
    counts = {s: 0 for s in STATES}
    for st in states.values():
        counts[st["state"]] += 1
    return counts


def grid_status(results: Path | str) -> tuple[list[Cell], dict[str, dict[str, Any]]]:
    """Every cell of the grids submitted into ``results`` and its state: done, running, failed (with its
    log), missing or unknown (its Slurm job's state cannot be told)."""
    results = Path(results)
    if not results.is_dir():
        raise EmbenchError(f"{results}: is a file; give the grid's results folder" if results.exists()
                           else f"{results}: no such results folder")
    cells = grid_cells(results)
    if not cells:
        raise EmbenchError(f"{results}: no grid was run here (no {GridState(results).root}/plans); "
                           "`embench results show --results-dir` lists its records")
    return cells, cell_states(cells, ResultStore(results), GridState(results))


