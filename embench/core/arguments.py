"""Arguments of the Python API checked as the command line checks its options: before any model loads.

A Python caller passes values the CLI's parser would have refused: a plain string where a list of names is asked
for (``tasks="STS13"`` was read letter by letter, as the tasks 'S', 'T', ...), a count as text or a fraction
(``batch_size="32"`` failed deep in the batching), something not callable as a callback (it failed after the first
task had been scored). Each is taken as meant where there is one meaning (a string is one name) and refused
otherwise, naming the argument.
"""

from __future__ import annotations

from collections.abc import Iterable
from os import PathLike
from typing import Any

from .defaults import SEED_MAX
from .errors import EmbenchError


def name_list(value: Any, what: str) -> list[str] | None:
    """``value`` as a list of names or paths: one string (or path) is a list of one; None stays None."""
    if value is None:
        return None
    if isinstance(value, str | PathLike):
        return [str(value)]
    if isinstance(value, bytes | dict) or not isinstance(value, Iterable):
        raise EmbenchError(f"{what} must be a name or a list of names, not {type(value).__name__} {value!r}")
    names = list(value)
    for v in names:
        if not isinstance(v, str | PathLike):
            raise EmbenchError(f"{what}: {v!r} is not a name (a {type(v).__name__})")
    return [str(v) for v in names]


def whole_number(value: Any, what: str, least: int | None = 1) -> int | None:
    """``value`` when it is a whole number (numpy's integers too) of at least ``least`` (None: any); None stays None."""
    if value is None:
        return None
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        bound = "" if least is None else f" of at least {least}"
        raise EmbenchError(f"{what} must be a whole number{bound}, not {type(value).__name__} {value!r}")
    if least is not None and int(value) < least:
        raise EmbenchError(f"{what} must be a whole number of at least {least}, not {value!r}")
    return int(value)


def callback(value: Any, what: str) -> Any:
    """``value`` when it can be called (or None): checked before the work whose end would call it."""
    if value is not None and not callable(value):
        raise EmbenchError(f"{what} must be a function (or None), not {type(value).__name__} {value!r}")
    return value


def is_seed(value: Any) -> bool:
    """Whether ``value`` is a seed numpy and torch take: a whole number from 0 to 2**32 - 1 (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= SEED_MAX


def truth(value: Any, what: str) -> Any:
    """``value`` when it is True, False or None: a string such as ``"no"`` would count as true (``normalize="no"``
    normalised the vectors and wrote "no" into the record's settings)."""
    if type(value).__module__ == "numpy" and type(value).__name__ in ("bool_", "bool"):  # numpy 2 names np.bool_ "bool"
        return bool(value)  # a Python bool: it goes into records and JSON as one
    if value is not None and not isinstance(value, bool):
        raise EmbenchError(f"{what} must be True or False, not {type(value).__name__} {value!r}")
    return value


def folder_argument(value: Any, what: str) -> Any:
    """``value`` when it is a path (a string or a PathLike) or None: a number failed inside pathlib, unnamed."""
    if value is not None and not isinstance(value, str | PathLike):
        raise EmbenchError(f"{what} must be a folder (a path), not {type(value).__name__} {value!r}")
    return value
