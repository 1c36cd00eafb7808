"""The command line: parse options, call the API, render. No logic of its own.

``app`` (the typer app) and ``main`` (the ``embench`` entry point) live in :mod:`embench.cli.app`;
shared options in :mod:`embench.cli.options`; one module per command in :mod:`embench.cli.commands`.
"""

from .app import app, main

__all__ = ["app", "main"]
