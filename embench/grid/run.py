"""Run a grid: plan it, write its job files, run them here or submit them to Slurm."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import IO, Any

from ..core.errors import EmbenchError
from ..evaluation.results import ResultStore
from .plan import Plan, plan, write_jobs
from .spec import GridSpec, expand_models
from .state import GridState
from .status import cell_states

EXECUTORS = ("local", "slurm")


def run_grid(spec: GridSpec, results: Path | str, *, executor: str = "local", workers: int = 1,
             slurm: Any = None, dry_run: bool = False, cluster: str | None = None, echo: IO[str] | None = None) -> Plan:
    """Plan the grid, write its job files, and run (local) or submit (slurm) them.

    ``cluster`` picks submitit's ``local`` or ``debug`` executor in place of Slurm (no cluster
    needed); ``dry_run`` writes the job files (and, for slurm, the sbatch file) and runs nothing.
    Returns the plan with every cell's state after the run (for slurm: at submission). ``echo`` (the CLI's
    stderr) gets the planning's progress and, from the local executor, every worker's lines as they come.
    """
    if executor not in EXECUTORS:
        raise EmbenchError(f"--executor {executor!r}: choose one of {', '.join(EXECUTORS)}")
    if workers < 1:
        raise EmbenchError(f"--workers must be at least 1, got {workers}")
    # absolute: the job logs the markers name (local.py builds them from it) are found from any cwd
    results = Path(results).resolve()
    # globs and list files as the CLI takes them (the module's example gives GridSpec(models=["ckpt/step-*"]))
    origins = dict(spec.origins)
    spec = dataclasses.replace(spec, models=expand_models(spec.models, origins), origins=origins)
    p = plan(spec, results, progress=echo is not None)
    job_files = write_jobs(p, spec, results)
    if dry_run or not job_files:
        if dry_run and executor == "slurm" and job_files:
            from .slurm import SlurmSettings
            from .slurm import dry_run as write_sbatch

            p.sbatch = write_sbatch(job_files, results, slurm or SlurmSettings())
        return p
    if executor == "local":
        from .local import run_local

        run_local(job_files, results, workers, echo=echo)
    else:
        from .slurm import SlurmSettings, submit

        p.submitted = submit(job_files, results, slurm or SlurmSettings(), cluster or "slurm")
        if cluster in ("local", "debug"):  # no cluster: wait here, as the local executor does
            for job in p.submitted:
                with contextlib.suppress(Exception):  # its cells' markers hold the reason
                    job.result()
    p.states = cell_states(p.cells, ResultStore(results), GridState(results))
    return p
