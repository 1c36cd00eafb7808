"""Which stored model a name given on the command line (``-m``, ``--name``) means, one rule for tables and figures:
``run -m ./tiny-bert`` stores ``./tiny-bert`` while ``analyze -m ./tiny-bert`` writes ``tiny-bert``, so matching
tables by one rule and figures by another left the very command that made a figure unable to name it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path


def same_model(stored: str, asked: str) -> bool:
    """A stored model name (a record's, an analysis output's) matches the name asked for, or their last path parts
    do (a folder moved, or named ./x where the analysis wrote x)."""
    stored, asked = str(stored), str(asked).rstrip("/")
    return stored == asked or Path(stored).name == Path(asked).name


def model_labels(models: Iterable[str], names: Mapping[str, str] | None) -> dict[str, str]:
    """Each of ``models`` (as stored) with its ``--name`` label: the one given for it exactly, else the one given for
    a name :func:`same_model` matches, where that name is no other stored model's own (two folders called tinybert,
    one of them named, leave the other as it is) and only one such name is given; else the model as stored."""
    models, names = list(dict.fromkeys(map(str, models))), dict(names or {})
    labels = {}
    for m in models:
        near = [k for k in names if k not in models and same_model(m, k)]
        labels[m] = names[m] if m in names else names[near[0]] if len(near) == 1 else m
    return labels
