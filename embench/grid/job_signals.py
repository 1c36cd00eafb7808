"""SIGTERM inside a submitit job: stop as on Ctrl-C, as every other embench process does, beside submitit's own
handling of the signal Slurm sends before a time limit.

submitit ignores SIGTERM in the jobs it runs (it logs "Bypassing signal SIGTERM") and requeues a checkpointable
job when its own signal (USR2, sent by Slurm ``--signal=USR2@90`` before the time limit) arrives. Ignored, the
SIGTERM of ``scancel``, of a preemption or of the time limit itself is followed ``KillWait`` seconds later by
SIGKILL, and the texts encoded since the last cache write and the markers of the cells in progress are lost.
Here the first SIGTERM raises KeyboardInterrupt in the job (the engine writes what it encoded, the job marks
its unfinished cells, then it exits), while submitit's USR2 handler runs as before; a SIGTERM that follows it
(``scontrol requeue`` stops the running job that way) is ignored, so the requeue's own exit is not cut short.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from typing import Any


class JobEnds(BaseException):
    """submitit's handler decided the job is over (e.g. timed out too often to requeue): the error it raised
    travels up as this, past the job's per-task ``except Exception``, and is raised again at the job's top."""

    def __init__(self, error: Exception):
        super().__init__(str(error))
        self.error = error


class Stop:
    """What the guard saw: ``terminated`` once a SIGTERM stopped the job."""

    terminated = False


@contextlib.contextmanager
def stop_on_sigterm(requeue_signal: str | None = None) -> Iterator[Stop]:
    """While the block runs: SIGTERM raises KeyboardInterrupt (once), and submitit's handler of
    ``requeue_signal`` (its ``JobEnvironment.USR_SIG``, e.g. ``USR2``) still runs, first marking the job as
    stopping. Both handlers are put back afterwards. A no-op off the main thread (signals reach only it)."""
    import threading

    seen = Stop()
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return
    stopping = False
    usr = getattr(signal, f"SIG{requeue_signal}", None) if requeue_signal else None
    before_term = signal.getsignal(signal.SIGTERM)
    before_usr = signal.getsignal(usr) if usr is not None else None

    def on_term(signum: int, frame: Any) -> None:  # noqa: ARG001 (a signal handler's signature)
        nonlocal stopping
        if stopping:  # a second SIGTERM, or the one after submitit's requeue: already on the way out
            return
        stopping = seen.terminated = True
        raise KeyboardInterrupt("stopped by SIGTERM")

    def on_requeue_signal(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True
        if callable(before_usr):
            try:
                before_usr(signum, frame)  # submitit: checkpoint, `scontrol requeue`, then sys.exit
            except Exception as e:  # its "not requeued" error must end the job, not only the task in progress
                raise JobEnds(e) from e

    signal.signal(signal.SIGTERM, on_term)
    if usr is not None and callable(before_usr):
        signal.signal(usr, on_requeue_signal)
    try:
        yield seen
    except JobEnds as ends:
        raise ends.error from None
    finally:
        signal.signal(signal.SIGTERM, before_term)
        if usr is not None and callable(before_usr):
            signal.signal(usr, before_usr)
