"""``python -m embench.grid.worker_process JOB.json --log PATH``: a local grid job's process, as the executor starts it.

Two things must hold before the job's heavy imports (torch, transformers, scipy: seconds), which this module alone
does not make:

* a stop (Ctrl-C or SIGTERM, forwarded by the grid) that lands while the worker is still importing ends it with one
  line, not a 30-line traceback of the import it broke;
* its output outlives the grid: the grid relays each line to its log and terminal, but a grid that is killed (kill -9)
  leaves the worker writing into a pipe nobody reads. The first failed write sends every later line to the job's
  log instead, and the job goes on to store its cells (a write error would otherwise end it with nothing stored).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO

from ..core.signals import terminate_as_interrupt, terminated


class _LogWhenOrphaned:
    """A stream that writes to ``primary`` (the pipe to the grid) until a write fails, then appends to ``log``."""

    def __init__(self, primary: IO[str], log: str | None):
        self.primary, self.log_path, self.fallback = primary, log, None

    def write(self, text: str) -> int:
        if self.fallback is None:
            try:
                written = self.primary.write(text)
                self.primary.flush()
                return written
            except (BrokenPipeError, OSError, ValueError):  # the grid is gone: its pipe has no reader
                self._orphaned()
        written = self.fallback.write(text)
        self.fallback.flush()
        return written

    def flush(self) -> None:
        if self.fallback is None:
            try:
                self.primary.flush()
            except (BrokenPipeError, OSError, ValueError):
                self._orphaned()

    def _orphaned(self) -> None:
        self.fallback = open(self.log_path or "/dev/null", "a", encoding="utf-8")  # noqa: SIM115 (lives with the process)

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str):  # encoding, fileno, ...: the pipe's
        return getattr(self.primary, name)


def main(argv: list[str]) -> int:
    log = argv[argv.index("--log") + 1] if "--log" in argv[:-1] else None
    sys.stdout, sys.stderr = _LogWhenOrphaned(sys.stdout, log), _LogWhenOrphaned(sys.stderr, log)
    terminate_as_interrupt()
    job = Path(next((a for a in argv if not a.startswith("--") and a != log), "?")).stem
    try:
        from .worker import main as run_job_main
    except KeyboardInterrupt:
        print(f"job {job}: {'stopped by SIGTERM' if terminated() else 'interrupted'} while starting; none of its cells "
              "ran: the next run of the grid does them", file=sys.stderr, flush=True)
        return 143 if terminated() else 130
    return run_job_main(argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
