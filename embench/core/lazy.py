"""Packages whose public names are imported on first use (PEP 562), so that importing a package (or
listing its registry) does not import torch, transformers or pandas until something needs them."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str], subpackages: tuple[str, ...] = ()
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: each name of ``exports`` comes from its module
    (``".encoder"``, relative to the package, or absolute) when first asked for, then stays in the package; each of
    ``subpackages`` is imported when first asked for, so ``import embench; embench.analysis.run(...)`` works as
    the README writes it."""

    def __getattr__(name: str) -> Any:
        if name in subpackages:
            return importlib.import_module(f"{package}.{name}")  # the import binds it on the package
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name], package), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports, *subpackages})

    return __getattr__, __dir__
