"""The values an analysis option may take, checked before any model loads.

An option's name fixes what it counts, the same in every analysis that has it (``limit`` is a number of
examples everywhere, ``t`` the uniformity temperature of Wang & Isola 2020, Eq. 4 there). A value of the
wrong type or out of range used to reach numpy (``n_pairs=-5``, ``threshold=abc``) or pass silently and
write empty columns (``t=nan``, ``limit=0``); a misspelt ``metric`` or ``transform`` was found only after the
encoding. Options not named here (words such as ``split``, ``text``) are checked by the analysis that reads them; ``dataset``/``datasets`` by
:func:`embench.analysis.labelled.check_set_names`.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.arguments import is_seed
from ..core.defaults import SEED_MAX
from ..core.errors import EmbenchError


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)) and math.isfinite(value)


def _increasing(values: Any) -> bool:
    values = list(values) if isinstance(values, list | tuple) else [values]
    return len(values) >= 2 and all(_number(v) for v in values) and all(b > a for a, b in zip(values, values[1:], strict=False))


def _count(least: int) -> tuple[str, Any]:
    return f"a whole number >= {least}", lambda v: _integer(v) and v >= least


METRICS = ("euclidean", "cosine")  # kNN's distances (knn.knn_accuracy; the knn, layers and tsne analyses)
TRANSFORMS = ("raw", "centred", "whitened")  # of the vectors before kNN, fitted on the training split (knn.fit_transform)


def _one_of(names: tuple[str, ...]) -> tuple[str, Any]:
    """A word from ``names``, or (an option that takes several, knn's) a list of them."""
    return f"one of {', '.join(names)}", lambda v: all(x in names for x in (v if isinstance(v, list | tuple) else [v]))


# option -> (what it must be, in words; the test), the value None always allowed where the default is None
RULES: dict[str, tuple[str, Any]] = {
    "limit": _count(1),
    "n_pairs": _count(1),
    "k": _count(1),
    "batch_size": _count(1),
    "block_size": _count(1),
    "batch": _count(2),  # an in-batch negative needs a second row
    "batches": _count(1),
    "n_jobs": ("a whole number, -1 for every core", lambda v: _integer(v) and (v >= 1 or v == -1)),
    "seed": (f"a whole number from 0 to {SEED_MAX}", is_seed),
    "layer": ("a whole number (negative counts from the last layer)", _integer),
    "test_size": ("a fraction between 0 and 1", lambda v: _number(v) and 0 < v < 1),
    "t": ("a finite number > 0", lambda v: _number(v) and v > 0),
    "perplexity": ("a finite number > 0", lambda v: _number(v) and v > 0),
    "threshold": ("a finite number", _number),
    "sigma": ("a cosine in [-1, 1]", lambda v: _number(v) and -1 <= v <= 1),
    "edges": ("increasing numbers, at least two", _increasing),
    "metric": _one_of(METRICS),
    "transform": _one_of(TRANSFORMS),
    # attention: mean or a head's number; cls-energy: concat or mean (each analysis checks its own choice)
    "heads": ("mean, concat or a head's number", lambda v: v in ("mean", "concat") or str(v).isdigit()),
}


def _typed_like(default: Any) -> tuple[str, Any] | None:
    """The rule for an option no rule names: a number where its default is one (``n=abc`` reached the analysis)."""
    if isinstance(default, bool) or not isinstance(default, (int, float)):
        return None
    if isinstance(default, int):
        return "an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)
    return "a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)


def check_values(name: str, defaults: dict[str, Any], options: dict[str, Any], where: str = "") -> None:
    """Refuse an option value of the wrong type or out of range, naming the option and what it takes
    (``where``: how the user gave it, e.g. ``--eval-analysis 'knn:k=0'``)."""
    for key, value in options.items():
        rule = RULES.get(key) or _typed_like(defaults.get(key))  # a plug-in's option: the type of its default
        if rule is None or (value is None and defaults.get(key) is None):
            continue
        words, ok = rule
        if not ok(value):
            raise EmbenchError(f"{where or 'analysis ' + repr(name)}: {key}={value!r} is not allowed; {key} must be {words}")
