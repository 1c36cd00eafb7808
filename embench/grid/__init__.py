"""Evaluation grids: models x tasks x protocols, each cell a record of the results folder, run by an
existing job engine (processes here, Slurm through submitit), never by a scheduler of embench's own.

>>> from embench.grid import GridSpec, run_grid, grid_status          # doctest: +SKIP
>>> spec = GridSpec(models=["ckpt/step-*"], tasks=["STSBenchmark"], protocols=[{}, {"correlation": "pearson"}])
>>> run_grid(spec, "results", executor="local", workers=2)            # doctest: +SKIP
>>> grid_status("results")                                            # doctest: +SKIP

A cell is keyed by the record key ``embench run`` stores it under, so cells already in the folder
(from a grid, a run, an earlier embench whose records check out) are skipped, and a re-run after a
crash, a kill or a preemption does only the failed and missing cells.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from ..core.errors import EmbenchError
from ..evaluation.results import ResultStore
from .plan import Plan, plan, write_jobs
from .spec import GridSpec, expand_models, read_protocols
from .state import Cell, GridState
from .status import cell_states, grid_cells, status_frame, summary

EXECUTORS = ("local", "slurm")


def run_grid(spec: GridSpec, results: Path | str, *, executor: str = "local", workers: int = 1,
             slurm: Any = None, dry_run: bool = False, cluster: str | None = None) -> Plan:
    """Plan the grid, write its job files, and run (local) or submit (slurm) them.

    ``cluster`` picks submitit's ``local`` or ``debug`` executor in place of Slurm (no cluster
    needed); ``dry_run`` writes the job files (and, for slurm, the sbatch file) and runs nothing.
    Returns the plan with every cell's state after the run (for slurm: at submission).
    """
    if executor not in EXECUTORS:
        raise EmbenchError(f"--executor {executor!r}: choose one of {', '.join(EXECUTORS)}")
    if workers < 1:
        raise EmbenchError(f"--workers must be at least 1, got {workers}")
    results = Path(results)
    p = plan(spec, results)
    job_files = write_jobs(p, spec, results)
    if dry_run or not job_files:
        if dry_run and executor == "slurm" and job_files:
            from .slurm import SlurmSettings, dry_run as write_sbatch

            p.sbatch = write_sbatch(job_files, results, slurm or SlurmSettings())
        return p
    if executor == "local":
        from .local import run_local

        run_local(job_files, results, workers)
    else:
        from .slurm import SlurmSettings, submit

        p.submitted = submit(job_files, results, slurm or SlurmSettings(), cluster or "slurm")
        if cluster in ("local", "debug"):  # no cluster: wait here, as the local executor does
            for job in p.submitted:
                with contextlib.suppress(Exception):  # its cells' markers hold the reason
                    job.result()
    p.states = cell_states(p.cells, ResultStore(results), GridState(results))
    return p


def grid_status(results: Path | str) -> tuple[list[Cell], dict[str, dict[str, Any]]]:
    """Every cell of the grids submitted into ``results`` and its state: done, running, failed (with its
    log) or missing."""
    results = Path(results)
    if not results.is_dir():
        raise EmbenchError(f"{results}: no such results folder")
    cells = grid_cells(results)
    if not cells:
        raise EmbenchError(f"{results}: no grid was run here (no {GridState(results).root}/plans); "
                           "`embench results show --results-dir` lists its records")
    return cells, cell_states(cells, ResultStore(results), GridState(results))


__all__ = ["Cell", "GridSpec", "Plan", "expand_models", "grid_status", "read_protocols", "run_grid",
           "status_frame", "summary"]
