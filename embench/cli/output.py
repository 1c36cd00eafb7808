"""Where commands write: results on stdout (plain text, whatever the format), messages on stderr (rich).

Off a terminal (a log file, a pipe, a notebook's captured stderr) rich would wrap every line at 80 columns,
cutting words and URLs: the message console then never wraps, and each line is written as it is printed.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from rich.console import Console

WIDE = 10_000  # off a terminal: wide enough that no message or table row is ever wrapped


def message_console(stderr: bool = True) -> Console:
    """A console for messages: the terminal's width in a terminal; off one, one unwrapped line per message. Never
    emoji: escape() leaves ``:name:`` codes, and a path's ``file:100:`` would print as ``file💯``."""
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr, emoji=False)
    return Console(stderr=stderr, width=WIDE, soft_wrap=True, emoji=False)


err = message_console()
_interrupt_said: list[bool] = []  # a command has said how to go on after an interrupt (interrupted())


def interrupted(line: str) -> BaseException:
    """After Ctrl-C or SIGTERM: ``line`` (rich markup: what is kept, how to go on) on stderr, and the exit to raise
    (130; 143 under SIGTERM, ``app.main``). ``main`` says its own general line only where no command said one: typer
    turns an interrupt no command caught into the same exit 130, silently."""
    import typer

    err.print(line, highlight=False, soft_wrap=True)
    _interrupt_said.append(True)
    return typer.Exit(130)


def interrupt_said() -> bool:
    return bool(_interrupt_said)

_PACKAGE = str(Path(__file__).resolve().parents[1])


def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """embench's own warnings as one ``warning: ...`` line (no source path, no code line); others as Python shows them."""
    if not str(filename).startswith(_PACKAGE):
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))
        return
    err.print("warning: " + str(message), style="yellow", highlight=False, markup=False, soft_wrap=True)


def emit(text: str) -> None:
    """Write ``text`` to stdout with exactly one trailing newline."""
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()  # a pipe holds stdout back until exit otherwise (`embench grid | tee log`)
