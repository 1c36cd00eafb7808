"""One registry idea for everything chosen by name: tasks, suites, poolers, model aliases and families,
training methods and recipes, analyses, CLI commands.

An entry is either the object itself or a lazy ``"package.module:attr"`` string imported on first
use (lm-evaluation-harness's ``lm_eval/api/registry.py`` is the model), so listing names costs no
import of torch or mteb. Lookups are case-insensitive; a wrong name raises
:class:`~embench.core.errors.UnknownNameError` with the nearest known names. A registry given an
entry-point group (``plugins="embench.methods"``) also holds what installed distributions declare
there (:mod:`embench.core.plugins`), read on the first name it does not hold or the first listing.

>>> METHODS = Registry("training method")
>>> METHODS.add("simcse", "embench.train.methods.simcse:SimCSE", "unsup-simcse")  # doctest: +SKIP
>>> METHODS.get("SimCSE")                                                          # doctest: +SKIP
"""

from __future__ import annotations

import difflib
import importlib
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from .errors import UnknownNameError
from .plugins import Expects, Plugin, PluginError, discover

T = TypeVar("T")


def nearest(name: str, known: list[str], n: int = 3) -> list[str]:
    """The known names closest to ``name`` (case-insensitive), best first."""
    lowered = {k.lower(): k for k in known}
    hits = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.5)
    prefix = [k for k in known if k.lower().startswith(name.lower()) and k not in hits]
    return [lowered[h] for h in hits] + prefix[: max(0, n - len(hits))]


def import_path(path: str) -> Any:
    """The object a ``"package.module:attr"`` string names.

    The attribute path may step into a mapping by key (``"module:TABLE.name"``), so a table of
    declarations (one row per task) needs no module attribute per row.
    """
    module, _, attr = path.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = obj[part] if isinstance(obj, Mapping) else getattr(obj, part)
    return obj


def is_lazy(item: Any) -> bool:
    return isinstance(item, str) and ":" in item and " " not in item


class Registry(Generic[T]):
    """A name -> object mapping: case-insensitive, lazy entries, did-you-mean errors."""

    def __init__(self, kind: str, *, plugins: str | None = None, expects: Expects | None = None):
        """``plugins``: the entry-point group whose entries join this registry; ``expects``: what each of
        them must be (checked when it is loaded: a Method subclass, a Task, ...)."""
        self.kind, self.group, self.expects = kind, plugins, expects
        self._plugins_read = plugins is None
        self._plugins: dict[str, Plugin] = {}  # name -> where a plug-in entry comes from
        self._items: dict[str, T | str] = {}
        self._lower: dict[str, str] = {}
        self._descriptions: dict[str, str] = {}
        self._aliases: dict[str, list[str]] = {}  # name -> its other spellings, as registered
        self._broken: set[str] = set()  # plug-ins that failed to load, warned about once
        # name -> canonical name or None; may register the name on demand (e.g. any MTEB task)
        self._resolvers: list[Callable[[str], str | None]] = []

    def add(self, name: str, item: T | str, *aliases: str, description: str = "") -> T | str:
        """Register ``item`` (or a lazy ``"module:attr"`` path) under ``name`` and ``aliases``."""
        for key in (name, *aliases):
            if key.lower() in self._lower and self._lower[key.lower()] != name:
                raise ValueError(f"{self.kind} {key!r} is registered twice")
            self._lower[key.lower()] = name
        self._items[name] = item
        self._aliases.setdefault(name, []).extend(a for a in aliases if a not in self._aliases.get(name, []))
        if description:
            self._descriptions[name] = description
        return item

    def remove(self, name: str) -> None:
        """Take back what :meth:`add` registered under ``name``, its aliases with it (a task file's task, registered
        for one ``evaluate`` call); a name not registered is left alone."""
        for alias in (name, *self._aliases.pop(name, [])):
            if self._lower.get(alias.lower()) == name:
                del self._lower[alias.lower()]
        self._items.pop(name, None)
        self._descriptions.pop(name, None)

    def register(self, name: str, *aliases: str, description: str = "") -> Callable[[T], T]:
        def deco(item: T) -> T:
            self.add(name, item, *aliases, description=description)
            return item

        return deco

    def add_resolver(self, resolver: Callable[[str], str | None]) -> None:
        """Consulted for names not registered: returns the canonical name after registering it, or None."""
        self._resolvers.append(resolver)

    def read_plugins(self) -> None:
        """Register the entries of this registry's entry-point group (once; lazily, as plug-in entries).

        A plug-in whose name is taken (by a built-in name or an earlier plug-in) is left out with a warning:
        a built-in name always means the built-in object.
        """
        if self._plugins_read:
            return
        self._plugins_read = True
        try:
            found = discover(self.group)  # type: ignore[arg-type]
        except Exception as e:  # damaged metadata of some installed package: embench's own names still serve
            warnings.warn(f"the {self.kind} plug-ins ({self.group}) cannot be read ({type(e).__name__}: {e}); "
                          "only embench's own are known", stacklevel=3)
            found = []
        for plugin in found:
            taken = self._lower.get(plugin.name.lower())
            if taken is not None:
                owner = self._plugins[taken].distribution if taken in self._plugins else "embench"
                warnings.warn(f"{self.kind} plug-in {plugin.name!r} of {plugin.distribution} is ignored: {owner} "
                              f"already registers {taken!r}", stacklevel=3)
                continue
            self._lower[plugin.name.lower()] = plugin.name
            self._items[plugin.name] = plugin  # type: ignore[assignment]
            self._plugins[plugin.name] = plugin

    def plugin(self, name: str) -> Plugin | None:
        """Where entry ``name`` comes from when an installed plug-in declares it (None: embench's own)."""
        return self._plugins.get(self.canonical(name))

    def canonical(self, name: str) -> str:
        try:
            return self._lower[name.lower()]
        except KeyError:
            if not self._plugins_read:  # a built-in name never costs the entry-point scan
                self.read_plugins()
                return self.canonical(name)
            for resolve in self._resolvers:
                found = resolve(name)
                if found is not None:
                    return found
            known = list(self._items)
            raise UnknownNameError(self.kind, name, known, nearest(name, known)) from None

    def get(self, name: str) -> T:
        key = self.canonical(name)
        item = self._items[key]
        if isinstance(item, Plugin):  # imported and checked once; a PluginError names the distribution
            item = self._items[key] = item.load(self.kind, self.expects)
        elif is_lazy(item):
            item = self._items[key] = import_path(item)  # type: ignore[assignment]
        return item  # type: ignore[return-value]

    def aliases(self, name: str) -> list[str]:
        """The other names ``name`` answers to (``STS-B`` for ``STSBenchmark``)."""
        return list(self._aliases.get(self.canonical(name), []))

    def description(self, name: str) -> str:
        """The registered description, else the first docstring line of the (loaded) entry."""
        key = self.canonical(name)
        if key in self._descriptions:
            return self._descriptions[key]
        if key in self._plugins:  # said without importing the plug-in: listing stays as quick as without it
            plugin = self._plugins[key]
            return f"{plugin.summary} [plug-in: {plugin.distribution}, {plugin.value}]".strip()
        doc = getattr(self.get(key), "description", None) or (getattr(self.get(key), "__doc__", None) or "")
        return str(doc).strip().splitlines()[0] if str(doc).strip() else ""

    def __contains__(self, name: str) -> bool:
        if name.lower() not in self._lower and not self._plugins_read:
            self.read_plugins()
        return name.lower() in self._lower

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def names(self) -> list[str]:
        self.read_plugins()
        return list(self._items)

    def items(self) -> Iterator[tuple[str, T]]:
        """(name, object) pairs; lazy entries are imported. A plug-in that cannot be loaded (or is not what this
        registry holds) is left out with a warning: a command going over every entry (``data check``, the suites of
        a report, ``analyze list``) is not stopped by a broken plug-in it does not use; naming it still stops."""
        for name in self.names():
            try:
                yield name, self.get(name)
            except PluginError as e:
                if name not in self._broken:
                    self._broken.add(name)
                    warnings.warn(f"{e}; it is left out", stacklevel=2)
