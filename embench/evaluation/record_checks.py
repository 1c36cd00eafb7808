"""What a stored record must show before it is reused: scores that agree with each other, and data files
that are still the ones it was computed from.

A record is reused instead of encoding and scoring again, so it must be what embench itself wrote for the
data at hand. A ``main_score`` that disagrees with the record's own score table (an edited file) or a data
file whose sha256 differs from the one the record stores (a damaged root since repaired, another release)
means the record is computed again, with one line saying why.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..data.manifest import content_sha256
from ..data.root import DataRoot

TOLERANCE = 1e-9  # JSON keeps a float exactly; the means are recomputed, hence not bit-equal


def oversized(value: Any) -> bool:
    """A JSON integer too large for a float anywhere in ``value`` (an edited file: ``1`` and 400 zeros). Each use of
    it as a score (``float()``, ``math.isfinite``, an arithmetic with a float) would raise an OverflowError."""
    stack = [value]  # a loop, not a recursion: json.loads nests deeper than a recursion may go
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, int) and not isinstance(v, bool):
            try:
                float(v)
            except OverflowError:
                return True
    return False


def shown_number(v: Any) -> str:
    """``v`` for a message: an integer of hundreds of digits (an edited file) cut to its first ones."""
    text = str(v)
    return f"{text[:12]}... ({len(text)} characters)" if len(text) > 40 else text


def score_problem(raw: dict[str, Any]) -> str | None:
    """Why a record's scores contradict each other, or None."""
    if oversized(raw):
        return "it holds a number too large for a float"
    scores, protocol, main = raw["scores"], raw["protocol"], raw["main_score"]
    if raw.get("kind") == "sts":
        agg, corr = protocol.get("aggregation"), protocol.get("correlation")
        table = scores.get(agg)
        if not isinstance(table, dict) or not isinstance(table.get(corr), (int, float)):
            return None  # nothing to cross-check (embench writes the table; a bare record only has its main score)
        if abs(table[corr] - main) > TOLERANCE:
            return f"its main score {main} is not its own {agg}/{corr} score {table[corr]}"
        return _subset_problem(scores)
    if raw.get("kind") == "transfer" and isinstance(scores.get("test_acc"), (int, float)):
        if abs(scores["test_acc"] - main) > TOLERANCE:
            return f"its main score {main} is not its own test accuracy {scores['test_acc']}"
    if raw.get("kind") == "mteb":
        name = scores.get("main_score_name")
        if isinstance(scores.get(name), (int, float)) and abs(scores[name] - main) > TOLERANCE:
            return f"its main score {main} is not its own {name} {scores[name]}"
    return None


def _subset_problem(scores: dict[str, Any]) -> str | None:
    """STS: ``mean`` and ``wmean`` are the plain and pair-weighted means of the subsets' correlations."""
    subsets = scores.get("subsets")
    if not isinstance(subsets, dict) or not subsets:
        return None
    try:
        n = [float(s["n"]) for s in subsets.values()]
        for corr in ("pearson", "spearman"):
            values = [float(s[corr]) for s in subsets.values()]
            if not all(math.isfinite(v) for v in values):
                return None  # a constant subset: its correlation is undefined, the means say so themselves
            mean, wmean = sum(values) / len(values), sum(v * k for v, k in zip(values, n, strict=True)) / sum(n)
            for name, want in (("mean", mean), ("wmean", wmean)):
                have = scores.get(name, {}).get(corr)
                if isinstance(have, (int, float)) and abs(have - want) > 1e-6:
                    return f"its {name}/{corr} score {have} is not the {name} of its subsets ({want})"
    except (KeyError, TypeError, ValueError, ZeroDivisionError, OverflowError):
        return "its per-subset scores are malformed"
    return None


def data_problem(record: Any, root: DataRoot | Path, sha256: Any) -> str | None:
    """Why ``record`` was computed from other data than ``root`` holds now, or None.

    ``sha256(path)`` is the data root's (memoised) file hash; the record's ``data_files`` name each file
    relative to its root with its sha256. That root may be this one given in another layout (``data`` then
    ``data/senteval``): each file is looked for where this root's layout keeps it (``DataRoot.recorded``)."""
    root = root if isinstance(root, DataRoot) else DataRoot(Path(root))
    files = (record.provenance or {}).get("data_files") or {}
    for rel, want in files.items():
        path = root.recorded(rel)
        if not path.is_file():
            return f"its data file {rel} is not in the data root {root.path}"
        # a .gz file's record holds the sha256 of its content (provenance.data_checksums), one of an older version
        # the file's own bytes: either names the same data
        if sha256(path) != want and not (path.suffix == ".gz" and content_sha256(path) == want):
            return f"its data file {rel} has changed since (sha256 differs)"
    return None
