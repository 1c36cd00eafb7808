"""One registry idea for everything that is chosen by name: tasks, suites, poolers, model aliases.

A wrong name raises :class:`~embench.errors.UnknownNameError` with the nearest known names.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from .errors import UnknownNameError

T = TypeVar("T")


def nearest(name: str, known: list[str], n: int = 3) -> list[str]:
    """The known names closest to ``name`` (case-insensitive), best first."""
    lowered = {k.lower(): k for k in known}
    hits = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.5)
    prefix = [k for k in known if k.lower().startswith(name.lower()) and k not in hits]
    return [lowered[h] for h in hits] + prefix[: max(0, n - len(hits))]


class Registry(Generic[T]):
    """A name -> object mapping with case-insensitive lookup and did-you-mean errors."""

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}
        self._lower: dict[str, str] = {}
        # name -> canonical name or None; may register the name on demand (e.g. any MTEB task)
        self._resolvers: list[Callable[[str], str | None]] = []

    def add(self, name: str, item: T, *aliases: str) -> T:
        for key in (name, *aliases):
            if key.lower() in self._lower and self._lower[key.lower()] != name:
                raise ValueError(f"{self.kind} {key!r} is registered twice")
            self._lower[key.lower()] = name
        self._items[name] = item
        return item

    def register(self, name: str, *aliases: str) -> Callable[[T], T]:
        def deco(item: T) -> T:
            return self.add(name, item, *aliases)

        return deco

    def add_resolver(self, resolver: Callable[[str], str | None]) -> None:
        """Consulted for names not registered: returns the canonical name after registering it, or None."""
        self._resolvers.append(resolver)

    def canonical(self, name: str) -> str:
        try:
            return self._lower[name.lower()]
        except KeyError:
            for resolve in self._resolvers:
                found = resolve(name)
                if found is not None:
                    return found
            known = list(self._items)
            raise UnknownNameError(self.kind, name, known, nearest(name, known)) from None

    def get(self, name: str) -> T:
        return self._items[self.canonical(name)]

    def __contains__(self, name: str) -> bool:
        return name.lower() in self._lower

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def names(self) -> list[str]:
        return list(self._items)

    def items(self):
        return self._items.items()
