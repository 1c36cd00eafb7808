"""The local executor: each job a ``python -m embench.grid.worker`` process on this machine, at most
``workers`` at once, each with its own log file.

A process per job (not threads, not a fork of this one) keeps a crash, an out-of-memory kill or a
stuck model inside its job; the torch threads are shared out so that N workers do not each spin up
every core.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..evaluation.results import ResultStore
from .state import Cell, GridState, read_json


def _threads_each(workers: int) -> int:
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def run_local(job_files: Sequence[Path], results: Path, workers: int = 1,
              on_done: Callable[[str, int, Path], None] | None = None) -> dict[str, int]:
    """Run every job file, ``workers`` at a time; returns job id -> exit status (negative: killed by that signal)."""
    state = GridState(results)
    env = {**os.environ, "OMP_NUM_THREADS": str(_threads_each(workers)), "TOKENIZERS_PARALLELISM": "false"}
    # the worker must import this very embench, wherever it was imported from
    package_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH")]))

    def one(job_file: Path) -> tuple[str, int]:
        job_id = job_file.stem
        log = state.log_path(job_id)
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as fh:
            rc = subprocess.run([sys.executable, "-m", "embench.grid.worker", str(job_file), "--log", str(log)],
                                stdout=fh, stderr=subprocess.STDOUT, env=env).returncode
        if rc < 0:  # killed: the worker wrote nothing; its unfinished cells say so
            _mark_killed(job_file, state, -rc, log)
        if on_done is not None:
            on_done(job_id, rc, log)
        return job_id, rc

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return dict(pool.map(one, job_files))


def _mark_killed(job_file: Path, state: GridState, sig: int, log: Path) -> None:
    job = read_json(job_file) or {}
    store = ResultStore(state.results)
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    for raw in job.get("cells", []):
        cell = Cell.from_dict(raw)
        if store.find(cell.model, cell.task, cell.key) is None:
            state.mark(cell, "failed", job=job.get("id"), log=str(log), error=f"its worker was killed ({name})")
