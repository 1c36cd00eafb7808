"""One progress display for everything that counts units against a total (texts encoded, steps trained):
a rich bar in a terminal; where stderr is not a terminal (a log file, a batch job), a plain line every
``EMBENCH_PROGRESS_EVERY`` seconds (default 30) and one at the end, never silence."""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any


def announce(enabled: bool, message: str) -> None:
    """One line on stderr about work that has no count (loading a model): dim in a terminal, plain in a log."""
    if not enabled:
        return
    if sys.stderr.isatty():
        from rich.console import Console
        from rich.markup import escape

        Console(stderr=True, emoji=False).print(f"[dim]{escape(message)}[/]", highlight=False, soft_wrap=True)
    else:
        print(message, file=sys.stderr, flush=True)


class RateProgress:
    """``<verb> <name>  bar  done/total  [field ...]  rate unit/s  time left``, or nothing when disabled.

    ``fields`` are extra columns shown by name (``loss`` becomes ``loss {value}``), set with :meth:`advance`.
    Used as a context manager; :meth:`advance` is a no-op when the bar is disabled.
    """

    def __init__(self, enabled: bool, verb: str, name: str, total: int, unit: str, rate_format: str = ".2f",
                 completed: int = 0, fields: tuple[str, ...] = (), transient: bool = False):
        self.enabled, self.verb, self.name, self.total, self.unit = enabled, verb, name, total, unit
        self.rate_format, self.completed, self.fields, self.transient = rate_format, completed, fields, transient

    def __enter__(self) -> RateProgress:
        if not self.enabled:
            return self
        self._log = not sys.stderr.isatty()
        if self._log:
            self._every = float(os.environ.get("EMBENCH_PROGRESS_EVERY", "30"))
            self._start = self._last = time.monotonic()
            self._done, self._fields = self.completed, dict.fromkeys(self.fields, "-")
            return self
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            TextColumn,
            TimeRemainingColumn,
        )
        from rich.text import Text

        fmt, unit = self.rate_format, self.unit

        class Rate(ProgressColumn):
            def render(self, task):
                return Text(f"{task.speed:{fmt}} {unit}/s" if task.speed else "")

        columns = [TextColumn(f"[bold]{self.verb}[/] {{task.description}}"), BarColumn(), MofNCompleteColumn()]
        columns += [TextColumn(f"{f} {{task.fields[{f}]}}") for f in self.fields]
        self._p = Progress(*columns, Rate(), TimeRemainingColumn(), transient=self.transient)
        self._p.__enter__()
        self._task = self._p.add_task(self.name, total=self.total, completed=self.completed, **dict.fromkeys(self.fields, "-"))
        return self

    def advance(self, n: int = 1, **fields: Any) -> None:
        if not self.enabled:
            return
        if not self._log:
            self._p.update(self._task, advance=n, **fields)
            return
        self._done += n
        self._fields.update(fields)
        if time.monotonic() - self._last >= self._every:
            self._line()

    def _line(self, end: str = "") -> None:
        self._last = time.monotonic()
        elapsed = max(self._last - self._start, 1e-9)
        rate = (self._done - self.completed) / elapsed
        left = f", {(self.total - self._done) / rate:.0f} s left" if rate > 0 and self._done < self.total and not end else ""
        extra = "".join(f", {k} {v}" for k, v in self._fields.items())
        print(f"{self.verb} {self.name}: {self._done}/{self.total} {self.unit}{extra}, {rate:{self.rate_format}} "
              f"{self.unit}/s{left}{end}", file=sys.stderr, flush=True)

    def __exit__(self, *exc) -> bool:
        if self.enabled and self._log:
            self._line(f" ({time.monotonic() - self._start:.1f} s)")
        elif self.enabled:
            self._p.__exit__(*exc)
        return False


@contextlib.contextmanager
def third_party_bars(shown: bool) -> Iterator[None]:
    """Other libraries' bars only when progress is on: transformers' own (weight loading) and every tqdm bar (mteb's
    "Computing text hashes", datasets' maps), so that ``-q`` and ``progress=False`` are silent."""
    if shown:
        yield
        return
    with contextlib.ExitStack() as stack:
        if "transformers" in sys.modules:  # only a model that transformers loads can show its bars
            hf_logging = importlib.import_module("transformers.utils.logging")
            if hf_logging.is_progress_bar_enabled():
                hf_logging.disable_progress_bar()
                stack.callback(hf_logging.enable_progress_bar)
        stack.enter_context(_tqdm_silenced())
        yield


_TQDM_LOCK = threading.Lock()
_tqdm_off: list[Any] = [0, None]  # how many callers have tqdm silenced, and the __init__ to put back after the last


@contextlib.contextmanager
def _tqdm_silenced() -> Iterator[None]:
    """Every tqdm bar made meanwhile starts disabled, as ``TQDM_DISABLE=1`` makes them (how the CLI's ``-q`` silences
    them: tqdm reads it once, when imported, before a command imports any library; the API runs after). A bar that
    asks ``disable=False`` itself is still shown, as under the variable. Counted, so nested and concurrent callers
    (an engine's pass inside an mteb task's scoring) put tqdm back only when the last one leaves."""
    if importlib.util.find_spec("tqdm") is None:
        yield
        return
    bar = importlib.import_module("tqdm.std").tqdm
    with _TQDM_LOCK:
        if _tqdm_off[0] == 0:
            _tqdm_off[1] = vars(bar)["__init__"]
            bar.__init__ = functools.partialmethod(_tqdm_off[1], disable=True)
        _tqdm_off[0] += 1
    try:
        yield
    finally:
        with _TQDM_LOCK:
            _tqdm_off[0] -= 1
            if _tqdm_off[0] == 0:
                bar.__init__ = _tqdm_off[1]
