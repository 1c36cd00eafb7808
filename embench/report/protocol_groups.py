"""Which records stand together in one row or one table: the protocol axes of a record's kind of task, those its task
is scored under, and the rows that records agreeing on every setting both have form.

A setting a record does not have (None: a transfer task has no STS aggregation, STS13 no SICK-R split) agrees with
every value, so a record joins each row it does not contradict. Which axes a task is scored under is known to the
task layer above this one; it is passed in (``axes_of``), never imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

# The protocol axes that change a number of each kind of task (the other axes of a record's protocol
# are stored but play no part in its score: MRPC does not care how STS12 aggregates).
AXES_BY_KIND: dict[str, tuple[str, ...]] = {
    "sts": ("aggregation", "correlation", "text", "sick_split", "stsb_split", "similarity", "scoring"),
    "transfer": ("classifier", "pair_features", "seed"),
    "mteb": (),
}

AxesOf = Callable[[Any], Iterable[str]]  # a record -> the protocol axes its task's score depends on


def protocol_of(record: Any) -> tuple[tuple[str, Any], ...]:
    """The axes of ``record.protocol`` that its kind of task depends on (all of them for an unknown kind)."""
    axes = AXES_BY_KIND.get(record.kind, tuple(sorted(record.protocol)))
    return tuple((a, record.protocol.get(a)) for a in axes)


def scored_protocol(record: Any, axes_of: AxesOf | None = None) -> dict[str, Any]:
    """The axes of the record's kind, None where its task is not scored under one (``axes_of``; without it, every
    axis of the kind counts): a record stores such an axis at its default, which says nothing of the run.

    An axis ``axes_of`` names that no kind has is the task's own (a task file's ``task_data``, the digest of its
    files): it tells two versions of that task apart, never two tasks, so it is keyed by the task (``task_data
    (my-sts)``), which every other task's record lacks and so agrees with."""
    kind_axes = protocol_of(record)
    scored = list(axes_of(record)) if axes_of is not None else [a for a, _ in kind_axes]
    out = {a: (v if a in scored else None) for a, v in kind_axes}
    own = [a for a in scored if a not in out and record.protocol.get(a) is not None]
    return {**out, **{task_axis(a, record.task): record.protocol[a] for a in own}}


def task_axis(axis: str, task: str) -> str:
    """The name of ``task``'s own axis ``axis`` in a table: ``task_data (my-sts)``."""
    return f"{axis} ({task})"


def agrees(values: tuple, row: tuple) -> bool:
    """A record's settings agree with a row's where both have one (None: the setting does not apply)."""
    return all(v is None or r is None or v == r for v, r in zip(values, row, strict=True))


def row_keys(entries: Sequence[tuple[str, tuple]]) -> list[tuple]:
    """One row per model and most specific combination of settings: a combination with a None that another
    combination of the same model fills in is no row of its own. Combinations are compared within a model only, so
    the work grows with the combinations of each model, not with those of every model (`results show` of a large
    folder)."""
    by_model: dict[str, list[tuple]] = {}
    for m, v in dict.fromkeys(entries):
        by_model.setdefault(m, []).append(v)

    def covered(v: tuple, combos: list[tuple]) -> bool:  # another combination has every value v has, and more
        return any(all(y is None or x == y for x, y in zip(v2, v, strict=True))
                   and sum(x is not None for x in v2) > sum(y is not None for y in v) for v2 in combos)

    kept = {(m, v) for m, combos in by_model.items() for v in combos if not covered(v, combos)}
    return [(m, *v) for m, v in dict.fromkeys(entries) if (m, v) in kept]  # in the order first seen, as before


def applies_to(records: Sequence[Any], protocols: Sequence[dict[str, Any]], most: int = 4) -> dict[str, str]:
    """For an axis some records of a kind are scored under and others of that kind are not: the tasks it applies to
    (``sick_split`` -> ``SICK-R``), so that a note shared by every row does not claim it of every column."""
    out: dict[str, str] = {}
    for axis in dict.fromkeys(a for p in protocols for a in p):
        kinds = {r.kind for r, p in zip(records, protocols, strict=True) if p.get(axis) is not None}
        scored = [r.display for r, p in zip(records, protocols, strict=True) if p.get(axis) is not None]
        unscored = [r for r, p in zip(records, protocols, strict=True) if axis in p and p[axis] is None and r.kind in kinds]
        if scored and unscored:
            names = list(dict.fromkeys(scored))
            out[axis] = ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")
    return out
