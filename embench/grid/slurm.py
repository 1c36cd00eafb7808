"""The Slurm executor, through submitit: one job array per grid (one array task per job file), a log
per task, requeued on preemption or timeout (``GridJob`` is checkpointable; a requeued job skips the
cells its first run stored). Nothing here knows a particular cluster: partition, GPUs, time and
parallelism are options, anything else goes through ``--slurm-option key=value``.

submitit's ``local`` executor runs the same jobs as subprocesses without a cluster (the tests use it),
and ``dry_run`` writes the sbatch file of the array without submitting it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import EmbenchError
from .state import GridState, atomic_write
from .worker import run_job

try:
    import submitit
except ImportError:  # an optional extra: the local executor needs none of it
    submitit = None


def _need_submitit() -> Any:
    if submitit is None:
        raise EmbenchError("--executor slurm needs submitit: pip install 'embench[cluster]' (or pip install submitit)")
    return submitit


@dataclass
class SlurmSettings:
    partition: str | None = None
    gpus_per_job: int = 0
    cpus_per_job: int | None = None
    array_parallelism: int = 64
    timeout_min: int = 240
    mem_gb: float | None = None
    extra: dict[str, str] = field(default_factory=dict)  # any other sbatch option, e.g. {"account": "x"}

    def parameters(self) -> dict[str, Any]:
        """submitit's AutoExecutor parameters (its ``slurm_`` ones are dropped by the local executors)."""
        p: dict[str, Any] = {"timeout_min": self.timeout_min, "slurm_array_parallelism": self.array_parallelism,
                             "name": "embench-grid"}
        if self.partition:
            p["slurm_partition"] = self.partition
        if self.gpus_per_job:
            p["gpus_per_node"] = self.gpus_per_job
        if self.cpus_per_job:
            p["cpus_per_task"] = self.cpus_per_job
        if self.mem_gb:
            p["mem_gb"] = self.mem_gb
        if self.extra:
            p["slurm_additional_parameters"] = dict(self.extra)
        return p


class GridJob(submitit.helpers.Checkpointable if submitit is not None else object):  # type: ignore[misc]
    """A grid job as submitit runs it; on preemption or timeout submitit requeues it with the same job file."""

    def __call__(self, job_file: str) -> list[str]:
        try:
            log = str(submitit.JobEnvironment().paths.stdout)
        except KeyError:  # submitit's debug executor runs in this process and sets no job environment
            log = None
        failed = run_job(job_file, log)
        if failed:  # the array task shows FAILED in sacct; the cells' markers hold the reasons
            raise EmbenchError(f"{len(failed)} cell(s) of {Path(job_file).stem} failed: {', '.join(failed)}")
        return failed


def submit(job_files: Sequence[Path], results: Path, settings: SlurmSettings, cluster: str = "slurm") -> list[Any]:
    """Submit the jobs as one array (``cluster``: slurm, or submitit's local / debug for a run without one)."""
    sub = _need_submitit()
    folder = GridState(results).root / "slurm" / "%j"
    executor = sub.AutoExecutor(folder=folder, cluster=cluster)
    executor.update_parameters(**settings.parameters())
    return executor.map_array(GridJob(), [str(p) for p in job_files])


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
    params = _slurm_parameters(settings)
    executor.update_parameters(**params)
    executor.parameters["map_count"] = len(job_files)
    text = executor._make_submission_file_text(executor._submitit_command_str, "dry-run")
    sbatch = folder / "dry-run.sbatch"
    atomic_write(sbatch, text)
    atomic_write(folder / "dry-run.array.txt", "".join(f"{i}\t{p}\n" for i, p in enumerate(job_files)))
    return sbatch


def _slurm_parameters(settings: SlurmSettings) -> dict[str, Any]:
    """The same settings under submitit's SlurmExecutor names (AutoExecutor's translation, for the dry run)."""
    p: dict[str, Any] = {"time": settings.timeout_min, "array_parallelism": settings.array_parallelism,
                         "job_name": "embench-grid"}
    if settings.partition:
        p["partition"] = settings.partition
    if settings.gpus_per_job:
        p["gpus_per_node"] = settings.gpus_per_job
    if settings.cpus_per_job:
        p["cpus_per_task"] = settings.cpus_per_job
    if settings.mem_gb:
        p["mem"] = f"{int(settings.mem_gb)}GB"
    if settings.extra:
        p["additional_parameters"] = dict(settings.extra)
    return p
