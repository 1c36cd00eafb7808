"""SIGTERM handled as SIGINT: what Slurm (preemption, time limit), ``timeout``, ``docker stop`` and
``kill`` send is a request to stop, and embench stops the same way as on Ctrl-C, keeping every finished
task, cache shard and checkpoint and saying how to resume, instead of dying with nothing written."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

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


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM that arrive inside the block take effect when it ends (on the main thread; elsewhere
    signals reach no thread but it). For a write that an interrupt raised mid-way breaks into another error:
    torch.save's zip writer, interrupted, fails in its own clean-up ("unexpected pos"), so the run would end
    with that traceback instead of the interrupt's message and exit status."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    held = (signal.SIGINT, signal.SIGTERM)
    before = {s: signal.signal(s, lambda signum, frame: pending.append(signum)) for s in held}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
        if pending:  # delivered again, now to the handler the process had (KeyboardInterrupt, or the default)
            signal.raise_signal(pending[0])
