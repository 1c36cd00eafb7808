"""Which protocol published numbers used: parse them, then rank every protocol combination by its
distance to them.

Matching searches the grid aggregation x correlation x text x SICK-R split x similarity x STS-B/SICK-R
scoring, which needs only re-scoring of cached vectors.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..api import evaluate
from ..core.errors import EmbenchError
from ..evaluation.protocols import EvalProtocol
from ..evaluation.suites import SUITES
from ..report.progress import announce
from ..tasks import TASKS
from .knobs import KNOBS, MATCH_GRID
from .reported_values import checked_numbers, printed_decimals


def parse_reported(text: str) -> dict[str, float]:
    """``"STS12=70.97 STS13=76.53 ..."`` or seven bare numbers in sts-all order (an eighth, Avg., is ignored); each
    value a :class:`~embench.audit.reported_values.Printed` float that keeps its printed decimals."""
    tokens = [t for t in re.split(r"[\s,;]+", text.strip()) if t]
    if not tokens:
        raise EmbenchError("--reported is empty")
    if all("=" not in t for t in tokens):
        order = SUITES.get("sts-all").tasks
        if len(tokens) not in (len(order), len(order) + 1):
            raise EmbenchError(f"--reported without task names needs {len(order)} numbers in sts-all order ({', '.join(order)}), got {len(tokens)}")
        pairs = list(zip(order, tokens[: len(order)], strict=True))
    else:
        pairs = []
        for t in tokens:
            if "=" not in t:
                raise EmbenchError(f"--reported: token {t!r} is not TASK=NUMBER")
            name, value = t.split("=", 1)
            if name.lower() not in ("avg", "avg."):
                pairs.append((name, value))
    return checked_numbers([("", name, value) for name, value in pairs], "--reported", "--reported")


def read_reported_file(path: str | Path) -> dict[str, float]:
    """A CSV of reported numbers: either rows ``task,value`` or a header of task names and one row."""
    p = Path(path)
    try:
        lines = [(i, line) for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1) if line.strip()]
    except (OSError, UnicodeDecodeError) as e:
        raise EmbenchError(f"cannot read --reported-file {p}: {getattr(e, 'strerror', None) or e}") from None
    rows = [(i, [c.strip() for c in line.split(",")]) for i, line in lines]
    if all(len(r) == 2 for _, r in rows):
        pairs = [(i, a, b) for i, (a, b) in rows if a.lower() not in ("task", "avg", "avg.")]
    elif len(rows) >= 2:
        (_, header), (line, values) = rows[0], rows[1]
        if len(rows) > 2:  # one verdict per audit: the rows after the first were dropped in silence
            raise EmbenchError(f"{p}:{rows[2][0]}: a second row of values: --reported-file takes a header of tasks and "
                               "one row (the numbers of one model: give each model's in a file of its own)")
        if len(values) != len(header):
            raise EmbenchError(f"{p}:{line}: {len(values)} values for {len(header)} columns")
        pairs = [(line, a, b) for a, b in zip(header, values, strict=True) if a and a.lower() not in ("model", "avg", "avg.")]
    else:
        raise EmbenchError(f"{p}: expected rows 'task,value' or a header of task names and one row of values")
    return checked_numbers([(f"{p}:{line}", a, b) for line, a, b in pairs], "--reported-file", str(p))


def match_reported(model: str, reported: dict[str, float], tolerance: float, common: dict[str, Any], knobs: list[str],
                   on_step: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Every protocol combination of the match grid, ranked by its distance to ``reported`` (x100).

    A line per combination goes to ``on_step`` (default: stderr when ``common["progress"]``): a combination
    that trains SentEval's regressor takes tens of seconds on a CPU, and the whole search minutes."""
    tasks = list(reported)
    grid_knobs = [k for k in MATCH_GRID if k in knobs]
    base = EvalProtocol()
    encode_axes = [k for k in grid_knobs if k not in ("aggregation", "correlation")]
    # the regressor trains on SICK's train split: no full-split variant exists
    combos = [proto for combo in itertools.product(*(KNOBS[k] for k in encode_axes))
              if not ((proto := dict(zip(encode_axes, combo, strict=True))).get("scoring") == "regressor"
                      and proto.get("sick_split") == "full")]
    say = on_step or (lambda msg: announce(bool(common.get("progress")), msg))
    say(f"matching the reported numbers: {len(combos)} protocol combination(s) of {', '.join(encode_axes) or 'none'}, "
        f"each re-scored under every aggregation x correlation")
    rows, start = [], time.perf_counter()
    for i, proto in enumerate(combos, 1):
        setting = ", ".join(f"{k}={v}" for k, v in proto.items()) or "the baseline"
        trains = " (SentEval's regressor is trained unless its record is stored)" if proto.get("scoring") == "regressor" else ""
        say(f"matching [{i}/{len(combos)}] {setting}{trains}")
        ev = evaluate(model, None, tasks=tasks, **common, **proto,
                      on_task=regressor_lines(say, f"matching [{i}/{len(combos)}]") if trains else None)
        by_task = {r.task: r for r in ev.records}
        aggs = KNOBS["aggregation"] if "aggregation" in grid_knobs else [base.aggregation]
        corrs = KNOBS["correlation"] if "correlation" in grid_knobs else [base.correlation]
        for agg, corr in itertools.product(aggs, corrs):
            scores = {}
            for t in tasks:
                s = by_task[t].scores
                scores[t] = 100 * s[agg][corr]
            # ours at the reported number's own precision: 18.86 is the 18.9 of a paper that prints one decimal
            res = {t: round(scores[t], printed_decimals(reported[t])) - reported[t] for t in tasks}
            full = {"aggregation": agg, "correlation": corr, **proto}
            changed = sum(1 for k, v in full.items() if v != getattr(base, k))
            rows.append({
                **{k: full.get(k, getattr(base, k)) for k in MATCH_GRID},
                "n_within": sum(1 for x in res.values() if abs(x) <= tolerance + 1e-9),
                "mean_abs": float(np.mean([abs(x) for x in res.values()])),
                "max_abs": float(max(abs(x) for x in res.values())),
                "changed": changed,
                **{f"res:{TASKS.get(t).display}": r for t, r in res.items()},
            })
    say(f"matching: {len(combos)} combination(s) in {time.perf_counter() - start:.0f} s")
    # Most cells reproduced first: a protocol that gives six of seven numbers exactly (and one typo) is a
    # better explanation than one that is off by a little everywhere.
    frame = pd.DataFrame(rows)
    frame["_neg_within"] = -frame["n_within"]
    frame = frame.sort_values(["_neg_within", "max_abs", "mean_abs", "changed"], kind="stable")
    frame = frame.drop(columns="_neg_within").reset_index(drop=True)
    frame["match"] = frame["max_abs"] <= tolerance + 1e-9
    return frame


def regressor_lines(say: Callable[[str], None], prefix: str) -> Callable[[str, str, Any], None]:
    """A line as each regressor-scored task (STS-B, SICK-R: up to a minute each on a CPU) is done."""
    start = time.perf_counter()

    def scored(task: str, status: str, _record: Any) -> None:
        if task in ("STSBenchmark", "SICKRelatedness"):
            say(f"{prefix} {task}: {status} ({time.perf_counter() - start:.0f} s)")

    return scored


def verdict(matches: pd.DataFrame, tolerance: float) -> str:
    best = matches.iloc[0]
    desc = _describe(best)
    if best["match"]:
        others = int(matches["match"].sum()) - 1
        tail = f" ({others} other combination(s) also match within {tolerance:g})" if others else ""
        return f"matches {desc} (largest residual {best['max_abs']:.2f}){tail}"
    res_cols = [c for c in matches.columns if c.startswith("res:")]
    off = [f"{c[4:]} {best[c]:+.2f}" for c in res_cols if abs(best[c]) > tolerance + 1e-9]
    return (f"no protocol matches within {tolerance:g}; closest: {desc} (reproduces {int(best['n_within'])} of "
            f"{len(res_cols)} numbers; off: {', '.join(off)}; largest residual {best['max_abs']:.2f}, mean {best['mean_abs']:.2f})")


def _describe(row: pd.Series) -> str:
    sick = "SICK-R over all 9,927 pairs" if row["sick_split"] == "full" else "SICK-R test split (4,927 pairs)"
    return (f"aggregation={row['aggregation']}, {row['correlation']}, {row['similarity']}, {sick}, "
            f"text={row['text']}, STS-B/SICK-R scoring={row['scoring']}")
