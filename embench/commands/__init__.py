"""CLI commands beyond ``run``/``list``/``data``/``results``, one module each.

Each module defines ``register(app: typer.Typer) -> None``; :func:`register_all` calls every
module's ``register`` so a feature adds its command without editing ``cli.py``.
"""

from __future__ import annotations

import importlib
import pkgutil

import typer


def register_all(app: typer.Typer) -> None:
    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{mod.name}")
        register = getattr(module, "register", None)
        if callable(register):
            register(app)
