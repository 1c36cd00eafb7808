"""Plug-ins: registry entries that another installed distribution declares as entry points.

A package of its own adds a training method, task, pooler, analysis, model family, recipe, suite or
labelled set by naming it in its ``pyproject.toml`` (the mechanism of lm-evaluation-harness and
pytest plug-ins; :mod:`importlib.metadata` reads it):

.. code-block:: toml

    [project.entry-points."embench.methods"]
    annealed-simcse = "my_package.methods:AnnealedSimCSE"

A registry reads its group only when it must (a name it does not hold, or a listing), never at
import, so ``embench --help`` pays nothing; the object is imported when its name is first used and
checked against what the registry holds (:class:`Expects`). An import error or a wrong object is a
:class:`PluginError` naming the distribution and the entry point; the built-in names are untouched.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import EmbenchError


class PluginError(EmbenchError):
    """A plug-in that cannot be imported, or whose object is not what its registry holds."""


@dataclass(frozen=True)
class Expects:
    """What every object of a registry must be, in words (for the error) and as a test."""

    what: str
    test: Callable[[Any], bool]
    named: bool = False  # the object carries a ``name`` that must be its entry point's name

    def problem(self, obj: Any, name: str) -> str | None:
        """Why ``obj`` registered as ``name`` is refused, or None."""
        if not self.test(obj):
            return f"it is {_describe(obj)}, not {self.what}"
        own = getattr(obj, "name", None)
        if self.named and isinstance(own, str) and own.lower() != name.lower():
            return f"its name is {own!r}: the entry point must be called {own!r} (records and tables use the object's name)"
        return None


def _base(path: str) -> type:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def subclass_of(path: str, what: str) -> Expects:
    """Entries are classes deriving from the class at ``path`` (``"module:Class"``, imported at check time)."""
    return Expects(what, lambda obj: isinstance(obj, type) and issubclass(obj, _base(path)))


def instance_of(path: str, what: str, named: bool = True) -> Expects:
    """Entries are instances of the class (or runtime-checkable protocol) at ``path``."""
    return Expects(what, lambda obj: not isinstance(obj, type) and isinstance(obj, _base(path)), named)


def function_with(attributes: tuple[str, ...], what: str) -> Expects:
    """Entries are callables (functions) carrying ``attributes`` (e.g. those ``@analysis`` gives)."""
    return Expects(what, lambda obj: callable(obj) and not isinstance(obj, type) and all(hasattr(obj, a) for a in attributes))


def _describe(obj: Any) -> str:
    if isinstance(obj, type):
        return f"the class {obj.__module__}.{obj.__qualname__}"
    if callable(obj) and hasattr(obj, "__qualname__"):
        return f"the function {getattr(obj, '__module__', '?')}.{obj.__qualname__}"
    return f"a {type(obj).__module__}.{type(obj).__qualname__} object"


@dataclass(frozen=True)
class Plugin:
    """One entry point of a registry's group, not imported yet."""

    group: str
    name: str
    value: str  # "package.module:attr"
    distribution: str  # "name version" of the distribution declaring it
    summary: str  # the distribution's one-line summary (its pyproject description)

    @property
    def where(self) -> str:
        return f"entry point {self.name} = {self.value!r} in group {self.group!r} of the distribution {self.distribution}"

    def load(self, kind: str, expects: Expects | None) -> Any:
        """The object, imported and checked; a :class:`PluginError` names the plug-in otherwise."""
        module, _, attr = self.value.partition(":")
        try:
            obj: Any = importlib.import_module(module.strip())
            for part in attr.strip().split(".") if attr.strip() else ():
                obj = getattr(obj, part)
        except Exception as e:  # any failure of a plug-in's own code is the plug-in's, reported as such
            raise PluginError(f"{kind} plug-in {self.name!r} cannot be loaded ({type(e).__name__}: {e}); {self.where}. "
                              "Fix or uninstall that distribution; the built-in names work without it") from None
        problem = expects.problem(obj, self.name) if expects is not None else None
        if problem:
            raise PluginError(f"{kind} plug-in {self.name!r} is refused: {problem} ({expects.what} is needed); {self.where}")
        return obj


def discover(group: str) -> list[Plugin]:
    """Every entry point of ``group`` in the distributions on ``sys.path``, sorted by name.

    Read on demand (about 5 ms, plus 30 ms to import :mod:`importlib.metadata` the first time), never at import.
    """
    from importlib.metadata import entry_points

    found = []
    for ep in entry_points(group=group):
        dist = ep.dist
        origin = f"{dist.name} {dist.version}" if dist is not None else "(unknown distribution)"
        summary = (dist.metadata.get("Summary") or "") if dist is not None else ""
        found.append(Plugin(group, ep.name, ep.value, origin, summary.strip()))
    return sorted(found, key=lambda p: p.name.lower())
