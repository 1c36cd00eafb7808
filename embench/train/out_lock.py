"""One training run per output folder at a time.

Two ``embench train --out X`` at once would share ``X/checkpoint-last`` and ``X/best``: one dies on the
other's temporary file and the other reports a best checkpoint that the first overwrote. The first run
takes ``X/.embench-train.lock`` (created exclusively, naming its process and machine); a second run is
refused with who holds it. A lock whose process is dead on this machine (a kill -9, a crash) is taken over
with a warning; one from another machine cannot be checked from here and is reported with its file.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import socket
import warnings
from pathlib import Path

from ..core.errors import EmbenchError
from ..core.processes import process_alive

LOCK_NAME = ".embench-train.lock"


def check_out_folder(out: Path | str) -> None:
    """An ``--out`` that is a file is said as such (making the folder would fail with "File exists")."""
    if Path(out).exists() and not Path(out).is_dir():
        raise EmbenchError(f"--out {out} is a file, not a folder; choose another --out")


class OutputLock:
    """``with OutputLock(out):`` holds ``out`` for this process; released on exit, whatever ends the run."""

    def __init__(self, out: Path | str):
        self.path = Path(out) / LOCK_NAME
        self.held = self.created = False

    def _holder(self) -> dict:
        try:
            return json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def acquire(self) -> OutputLock:
        check_out_folder(self.path.parent)
        try:
            return self._acquire()
        except OSError as e:  # an unwritable --out: said before anything loads
            raise EmbenchError(f"--out {self.path.parent}: cannot write there ({e.strerror or e}); choose another --out") from None

    def _acquire(self) -> OutputLock:
        self.created = not self.path.parent.exists()  # removed again when the run leaves it empty (an early error)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        me = {"pid": os.getpid(), "host": socket.gethostname(), "started": dt.datetime.now().isoformat(timespec="seconds")}
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder()
                pid, host = holder.get("pid"), holder.get("host")
                if host == me["host"] and isinstance(pid, int) and pid != me["pid"] and not process_alive(pid):
                    warnings.warn(f"{self.path.parent}: taking over the lock of training process {pid} "
                                  f"(started {holder.get('started', '?')}), which is no longer running", stacklevel=3)
                    self.path.unlink(missing_ok=True)
                    continue
                who = f"process {pid} on {host}, started {holder.get('started', '?')}" if pid else "a run whose lock cannot be read"
                raise EmbenchError(f"--out {self.path.parent} is in use by another training run ({who}); wait for it "
                                   f"or choose another --out (if that run is gone, delete {self.path})") from None
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(me, f)
            self.held = True
            return self
        raise EmbenchError(f"--out {self.path.parent}: could not take its lock {self.path}")

    def release(self) -> None:
        if self.held:
            with contextlib.suppress(OSError):
                if self._holder().get("pid") == os.getpid():
                    self.path.unlink()
            with contextlib.suppress(OSError):  # only an empty folder: rmdir refuses any other
                if self.created:
                    self.path.parent.rmdir()
            self.held = False

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, *exc) -> bool:
        self.release()
        return False
