"""The local executor: each job a ``python -m embench.grid.worker_process`` process on this machine, at most
``workers`` at once, each with its own log file.

A process per job (not threads, not a fork of this one) keeps a crash, an out-of-memory kill or a
stuck model inside its job; the torch threads are shared out so that N workers do not each spin up
every core. Each worker's lines go to its log and, as they come, to this process's stderr behind the
job's id: a grid piped into ``tee`` or a log file shows its progress while it runs, not at its end.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO

from ..core.signals import terminated
from .state import GridState

DRAIN_SECONDS = 5.0  # how long a finished job's output is read on, once the job has exited
_ECHO_LOCK = threading.Lock()  # lines of several workers interleave whole, never mid-line


def _threads_each(workers: int) -> int:
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def run_local(job_files: Sequence[Path], results: Path, workers: int = 1,
              on_done: Callable[[str, int, Path], None] | None = None, echo: IO[str] | None = None) -> dict[str, int]:
    """Run every job file, ``workers`` at a time; returns job id -> exit status (negative: killed by that signal).
    ``echo`` (e.g. ``sys.stderr``) receives every line of every worker as it is written, ``[job id] line``."""
    state = GridState(results)
    # unbuffered: a worker's print reaches its log (and the echo) when it is made, not when the worker exits
    env = {**os.environ, "OMP_NUM_THREADS": str(_threads_each(workers)), "TOKENIZERS_PARALLELISM": "false",
           "PYTHONUNBUFFERED": "1"}
    # the worker must import this very embench, wherever it was imported from
    package_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH")]))

    finished: list[str] = []
    live: set[subprocess.Popen] = set()
    stopping = threading.Event()

    def one(job_file: Path) -> tuple[str, int]:
        job_id = job_file.stem
        if stopping.is_set():  # the grid was stopped before this job began: its cells stay missing
            return job_id, 130
        log = state.log_path(job_id)
        log.parent.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "embench.grid.worker_process", str(job_file), "--log", str(log)]
        with open(log, "ab") as fh:
            rc = _run_relayed(cmd, env, fh, echo, job_id, live)
        if rc < 0 or rc in (130, 143):  # killed, or stopped by SIGINT/SIGTERM: its unfinished cells say so
            _mark_killed(job_file, -rc if rc < 0 else rc - 128, log)
        if echo is not None:
            with _ECHO_LOCK:
                finished.append(job_id)
                how = "done" if rc == 0 else f"killed ({-rc})" if rc < 0 else f"exit status {rc}"
                echo.write(f"[{job_id}] {how}: {len(finished)} of {len(job_files)} job(s) finished; log {log}\n")
                echo.flush()
        if on_done is not None:
            on_done(job_id, rc, log)
        return job_id, rc

    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        return dict(pool.map(one, job_files))
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM (cli.app): passed on once to each worker, which stores what it finished
        stopping.set()
        for proc in list(live):
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM if terminated() else signal.SIGINT)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # the workers' stops are waited for: their cells are then marked


def _run_relayed(cmd: list[str], env: dict[str, str], log: IO[bytes], echo: IO[str] | None, job_id: str,
                 live: set[subprocess.Popen]) -> int:
    """Run ``cmd``; each line of its output goes to ``log`` and to ``echo`` as it arrives; returns its exit status.
    The worker has a session of its own: a stop sent to the grid's process group (Ctrl-C, ``timeout``) reaches the
    grid alone, which passes it on exactly once (two would break a worker's clean stop), and a grid killed outright
    leaves its workers to finish and store their cells."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True) as proc:
        live.add(proc)
        assert proc.stdout is not None
        stop = threading.Event()
        relay = threading.Thread(target=_relay, args=(proc.stdout.fileno(), log, echo, job_id, stop), daemon=True)
        relay.start()
        # the job's exit, not the end of its output: a process it left behind (its encoding processes, when the job
        # was killed outright) may hold the pipe open; what is left in it is read for a bound once the job is gone
        rc = proc.wait()
        relay.join(DRAIN_SECONDS)
        stop.set()
        relay.join()
        live.discard(proc)
        return rc


def _relay(fd: int, log: IO[bytes], echo: IO[str] | None, job_id: str, stop: threading.Event) -> None:
    """Each line read from ``fd`` to ``log`` and ``echo`` until its end or ``stop`` (polled: a blocked read of a
    pipe that something else holds open would never see it)."""
    rest = b""
    while not stop.is_set():
        if not select.select([fd], [], [], 0.2)[0]:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        *lines, rest = (rest + chunk).split(b"\n")
        for raw in lines:
            _write_line(raw + b"\n", log, echo, job_id)
    if rest:
        _write_line(rest, log, echo, job_id)


def _write_line(raw: bytes, log: IO[bytes], echo: IO[str] | None, job_id: str) -> None:
    log.write(raw)
    log.flush()
    if echo is not None:
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        with _ECHO_LOCK:
            echo.write(f"[{job_id}] {line}\n")
            echo.flush()


def _mark_killed(job_file: Path, sig: int, log: Path) -> None:
    from .worker import mark_unfinished  # here: the worker module imports the whole evaluation stack

    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    mark_unfinished(job_file, f"its worker was killed ({name})", log)
