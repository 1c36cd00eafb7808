"""The Slurm executor, through submitit: one job array per grid (one array task per job file), a log
per task, requeued on preemption or timeout (``GridJob`` is checkpointable; a requeued job skips the
cells its first run stored). Nothing here knows a particular cluster: partition, GPUs, time and
parallelism are options, anything else goes through ``--slurm-option key=value`` (both read in
``slurm_settings.py``).

In a job, SIGTERM (``scancel``, preemption, the time limit) stops the grid worker as Ctrl-C does while
submitit's own requeue signal keeps working (``job_signals.py``); each submission is noted with its Slurm
ids, so ``embench grid status`` shows what Slurm says of each job (``slurm_jobs.py``).

submitit's ``local`` executor runs the same jobs as subprocesses without a cluster, and ``dry_run``
writes the sbatch file of the array without submitting it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.atomic import write_text
from ..core.errors import EmbenchError
from .job_signals import stop_on_sigterm
from .slurm_settings import SlurmSettings
from .state import GridState

try:
    import submitit
except ImportError:  # an optional extra: the local executor needs none of it
    submitit = None


def _need_submitit() -> Any:
    if submitit is None:
        raise EmbenchError("--executor slurm needs submitit: pip install 'embench[cluster]' (or pip install submitit)")
    return submitit


def make_executor(folder: Path, settings: SlurmSettings, cluster: str = "slurm") -> Any:
    """submitit's executor with these settings, its files (pickles, logs) under ``folder/<job id>``."""
    executor = _need_submitit().AutoExecutor(folder=Path(folder) / "%j", cluster=cluster)
    executor.update_parameters(**settings.parameters())
    return executor


def map_array(executor: Any, fn: Any, *arguments: Sequence[Any],
              options: str = "the --slurm-partition and --slurm-option values") -> list[Any]:
    """``executor.map_array``, with sbatch's refusal (no controller reachable, an unknown partition, account or
    option) as one error quoting sbatch, instead of submitit's traceback; ``options``: what the command that
    submits has to set them (train has only ``--slurm-option``)."""
    from submitit.core.utils import FailedJobError

    try:
        return executor.map_array(fn, *arguments)
    except FailedJobError as e:
        said = "; ".join(line.strip() for line in str(e).splitlines() if line.strip().startswith("sbatch:")) or str(e).strip()
        raise EmbenchError(f"sbatch refused the job array: {said} (nothing was submitted; check that `sinfo` reaches "
                           f"the cluster and {options})") from None


def job_environment() -> Any:
    """submitit's environment of the job running here; None under its debug executor (this very process)."""
    try:
        return submitit.JobEnvironment()
    except KeyError:  # submitit's debug executor runs in this process and sets no job environment
        return None


def use_allotted_cpus() -> None:
    """torch threads = the CPUs Slurm gave the task, where nothing says otherwise: without cgroups or CPU binding
    a task sees every core of its node, and N tasks each spinning all of them crawl."""
    cpus = os.environ.get("SLURM_CPUS_PER_TASK")
    if cpus and "OMP_NUM_THREADS" not in os.environ:
        import torch

        torch.set_num_threads(int(cpus))


class GridJob(submitit.helpers.Checkpointable if submitit is not None else object):  # type: ignore[misc]
    """A grid job as submitit runs it; on preemption or timeout submitit requeues it with the same job file."""

    def __call__(self, job_file: str) -> list[str]:
        from .worker import mark_unfinished, run_job

        env = job_environment()
        log = str(env.paths.stderr) if env is not None else None
        slurm_job = str(env.job_id) if env is not None and env.cluster == "slurm" else None  # "12_3", as submitted
        use_allotted_cpus()
        try:
            with stop_on_sigterm(submitit.JobEnvironment.USR_SIG if env is not None else None) as stop:
                try:
                    failed = run_job(job_file, log, slurm_job)
                except KeyboardInterrupt:
                    if not stop.terminated:
                        raise
                    marked = mark_unfinished(job_file, "stopped by SIGTERM (cancelled, preempted or out of time)", log)
                    print(f"job {Path(job_file).stem}: stopped by SIGTERM; {len(marked)} cell(s) left, marked; finished "
                          "cells are stored and its encoded texts cached: the next run of the grid does the rest",
                          file=sys.stderr, flush=True)
                    raise SystemExit(143) from None  # as a process killed by SIGTERM; no result for submitit to keep
        except Exception as e:  # submitit's own end of the job (e.g. "timed-out too many times"): the cells say so
            mark_unfinished(job_file, f"{type(e).__name__}: {e}", log)
            raise
        if failed:  # the array task shows FAILED in sacct; the cells' markers hold the reasons
            raise EmbenchError(f"{len(failed)} cell(s) of {Path(job_file).stem} failed: {', '.join(failed)}")
        return failed


def submit(job_files: Sequence[Path], results: Path, settings: SlurmSettings, cluster: str = "slurm") -> list[Any]:
    """Submit the jobs as one array (``cluster``: slurm, or submitit's local / debug for a run without one);
    on Slurm each job's array task is noted for ``embench grid status``."""
    folder = GridState(results).root / "slurm"
    jobs = map_array(make_executor(folder, settings, cluster), GridJob(), [str(p) for p in job_files])
    if cluster == "slurm":
        from .slurm_jobs import record

        record(results, job_files, jobs, folder / "%j")
    return jobs


def dry_run(job_files: Sequence[Path], results: Path, settings: SlurmSettings) -> Path:
    """Write the sbatch file of the job array (and the list of job files its tasks take, in order) without
    submitting anything; returns the sbatch file."""
    _need_submitit()
    from submitit.slurm.slurm import SlurmExecutor

    class _Offline(SlurmExecutor):
        @classmethod
        def affinity(cls) -> int:  # no srun here: the file is written, never submitted
            return 1

    folder = GridState(results).root / "slurm"
    executor = _Offline(folder=folder / "%j")
    params = settings.parameters(executor="slurm")
    executor.update_parameters(**params)
    executor.parameters["map_count"] = len(job_files)
    text = executor._make_submission_file_text(executor._submitit_command_str, "dry-run")
    sbatch = folder / "dry-run.sbatch"
    write_text(sbatch, text)
    write_text(folder / "dry-run.array.txt", "".join(f"{i}\t{p}\n" for i, p in enumerate(job_files)))
    return sbatch
