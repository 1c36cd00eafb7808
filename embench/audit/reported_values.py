"""Published numbers as the audit takes them (``--reported``, ``--reported-file``, the API's ``reported``), checked
before any model loads: each task once, each an STS task (the matching re-scores STS records under every aggregation
x correlation: any other task's record has no such scores, and failed with a bare KeyError once every combination was
scored), on embench's x100 scale, each kept with the decimals it was printed with, which the matching rounds our
score to (18.9 is matched by 18.86: a paper printing one decimal never matched a score taken to two)."""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from typing import Any

from ..core.errors import EmbenchError, UnknownNameError
from ..core.registry import nearest
from ..evaluation.suites import MTEB_PREFIX, SUITES
from ..tasks import TASKS


class Printed(float):
    """A published number that keeps how many decimals it was printed with ("18.90": 2, though the float says 18.9)."""

    decimals: int

    def __new__(cls, value: Any) -> Printed:
        self = super().__new__(cls, value)
        self.decimals = printed_decimals(value)
        return self


def printed_decimals(value: Any) -> int:
    """The decimals of ``value`` as printed: a string's own ("18.90": 2), else those of the number's shortest repr
    (18.9: 1, 72: 0); a computed float (0.1 + 0.2) keeps all of its 17, so only an equal score matches it."""
    if isinstance(value, Printed):
        return value.decimals
    text = value.strip() if isinstance(value, str) else str(value) if isinstance(value, int) else repr(float(value))
    try:
        exponent = Decimal(text.replace("_", "")).as_tuple().exponent
    except InvalidOperation:  # float() reads a few spellings Decimal does not: keep every decimal of the float
        exponent = Decimal(repr(float(text))).as_tuple().exponent
    return max(0, -int(exponent))


def checked_numbers(items: list[tuple[str, str, Any]], option: str, source: str) -> dict[str, Printed]:
    """``items`` (where, task as spelled, number as given: its text or a number) as canonical task -> :class:`Printed`.

    ``where`` locates an item in messages (``rep.csv:3``; empty: ``source``, the option or the file)."""
    sts = ", ".join(SUITES.get("sts-all").tasks)
    out: dict[str, Printed] = {}
    first: dict[str, tuple[str, str]] = {}  # task -> (where, "STS-B=80"), to name both spellings of a duplicate
    for where, name, value in items:
        at = where or source
        if name.upper().startswith(MTEB_PREFIX.upper()):  # never resolved: mteb's task list is not read for a refusal
            kind, canon = "mteb", name
        elif name not in TASKS:
            raise UnknownNameError(f"task in {option}" + (f" at {where}" if where else ""), name, TASKS.names(),
                                   nearest(name, TASKS.names()))
        else:
            kind, canon = TASKS.get(name).kind, TASKS.canonical(name)
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise EmbenchError(f"{at}: {value!r} (for {name}) is not a number") from None
        if not math.isfinite(number):
            raise EmbenchError(f"{at}: {value!r} (for {name}) is not a finite number")
        if kind != "sts":
            what = "an mteb task, scored by mteb's own evaluator" if kind == "mteb" else f"a {kind} task"
            raise EmbenchError(f"{at}: {name} is {what}: {option} takes the published numbers of STS tasks ({sts}, "
                               "their aliases or a task file's pairs), which the matching re-scores under every "
                               "aggregation x correlation")
        if canon in first:
            where1, given1 = first[canon]
            elsewhere = f" at {where1}" if where1 and where1 != where else ""
            raise EmbenchError(f"{at}: {canon} is given twice, as {given1}{elsewhere} and as {name}={value}: "
                               "give each task once")
        first[canon] = (where, f"{name}={value}")
        out[canon] = Printed(value)
    if out and all(abs(v) <= 1 for v in out.values()):  # no STS score is <= 1 everywhere: these are correlations
        given = ", ".join(f"{t}={v:g}" for t, v in out.items())
        raise EmbenchError(f"{source}: every number is at most 1 ({given}): they look like correlations as fractions, "
                           "and the audit compares scores x100 (a Spearman of 0.7237 is 72.37): give them x100")
    return out
