"""Counts in words, as a reader expects them: "1 model", "4 models" (never "4 model(s)")."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, in the plural unless ``n`` is 1 (``plural`` for nouns that do not take an "s")."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
