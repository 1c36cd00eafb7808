"""SIGTERM handled as SIGINT: what Slurm (preemption, time limit), ``timeout``, ``docker stop`` and
``kill`` send is a request to stop, and embench stops the same way as on Ctrl-C, keeping every finished
task, cache shard and checkpoint and saying how to resume, instead of dying with nothing written."""

from __future__ import annotations

import signal
import threading

_TERMINATED = False


def _raise_interrupt(signum, frame) -> None:  # noqa: ARG001 (the signal handler's signature)
    global _TERMINATED
    _TERMINATED = True
    raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")


def terminate_as_interrupt() -> None:
    """From now on SIGTERM raises KeyboardInterrupt in the main thread (a no-op off the main thread)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_interrupt)


def terminated() -> bool:
    """Whether a SIGTERM arrived (the exit status is then 143, as a process killed by it would give)."""
    return _TERMINATED
