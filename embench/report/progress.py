"""One rich progress bar for everything that counts units against a total (texts encoded, steps trained)."""

from __future__ import annotations

from typing import Any


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
        if self.enabled:
            self._p.update(self._task, advance=n, **fields)

    def __exit__(self, *exc) -> bool:
        if self.enabled:
            self._p.__exit__(*exc)
        return False
