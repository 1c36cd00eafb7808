"""Where commands write: results on stdout (plain text, whatever the format), messages on stderr (rich)."""

from __future__ import annotations

import sys

from rich.console import Console

err = Console(stderr=True)


def emit(text: str) -> None:
    """Write ``text`` to stdout with exactly one trailing newline."""
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
