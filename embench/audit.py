"""Protocol audit: one model under every protocol variant, and which protocol published numbers used.

The knobs are those of ``docs/PROTOCOLS.md``. The audit varies one knob at a time from a baseline
(SimCSE's protocol: ``all``, Spearman, SentEval text, SICK-R test, cosine, the model's own pooling,
fp32, batch 128, the model's maximum length), plus the full aggregation x correlation grid of
SimCSE's Table B.2. Every evaluation goes through :func:`embench.evaluate`, so each distinct
encoding is computed once (the embedding cache) and the rest is re-scoring. Batch-size variants
are the exception: they bypass the cache, since measuring them means encoding again.

Matching published numbers searches the grid aggregation x correlation x text x SICK-R split x
similarity x STS-B/SICK-R scoring, which needs only re-scoring of cached vectors.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .api import evaluate
from .core.errors import EmbenchError, UnknownNameError
from .models.loader import load_model
from .protocols import Protocol
from .core.registry import nearest
from .suites import SUITES
from .tasks import TASKS

BASELINE_BATCH = 128
KNOBS: dict[str, list[Any]] = {
    "aggregation": ["all", "mean", "wmean"],
    "correlation": ["spearman", "pearson"],
    "text": ["senteval", "raw"],
    "sick_split": ["test", "full"],
    "scoring": ["cosine", "regressor"],
    "similarity": ["cosine", "dot"],
    "pooling": [None, "cls", "mean", "first_last_avg"],
    "dtype": ["fp32", "bf16"],
    "batch_size": [BASELINE_BATCH, 1, 64, 512],
    "max_length": [None, 32],
}
PROTOCOL_KNOBS = ("aggregation", "correlation", "text", "sick_split", "scoring", "similarity")
MODEL_KNOBS = ("pooling", "dtype", "max_length")
MATCH_GRID = ("aggregation", "correlation", "text", "sick_split", "similarity", "scoring")


@dataclass
class Variant:
    label: str
    knobs: dict[str, Any]  # the knob values that differ from the baseline

    def protocol(self) -> dict[str, Any]:
        return {k: v for k, v in self.knobs.items() if k in PROTOCOL_KNOBS}

    def model_options(self) -> dict[str, Any]:
        return {k: v for k, v in self.knobs.items() if k in MODEL_KNOBS and v is not None}


@dataclass
class AuditResult:
    model: str
    tasks: list[str]
    rows: pd.DataFrame  # index: variant label; columns: task display names + Avg. (fractions)
    variants: list[Variant]
    knob_effects: pd.DataFrame  # one row per knob, ranked by how far it moves Avg.
    matches: pd.DataFrame | None = None  # protocol combinations ranked by distance to reported
    reported: dict[str, float] | None = None
    verdict: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def variants(knobs: list[str]) -> list[Variant]:
    """The baseline, the aggregation x correlation grid, then one knob at a time."""
    out = [Variant("baseline", {})]
    if "aggregation" in knobs or "correlation" in knobs:
        aggs = KNOBS["aggregation"] if "aggregation" in knobs else ["all"]
        corrs = KNOBS["correlation"] if "correlation" in knobs else ["spearman"]
        for agg, corr in itertools.product(aggs, corrs):
            if (agg, corr) == ("all", "spearman"):
                continue
            diff = {k: v for k, v in (("aggregation", agg), ("correlation", corr)) if v != KNOBS[k][0]}
            out.append(Variant(", ".join(f"{k}={v}" for k, v in diff.items()), diff))
    for knob in knobs:
        if knob in ("aggregation", "correlation"):
            continue
        if knob not in KNOBS:
            raise UnknownNameError("audit knob", knob, list(KNOBS), nearest(knob, list(KNOBS)))
        for value in KNOBS[knob][1:]:
            out.append(Variant(f"{knob}={value}", {knob: value}))
    return out


def _task_list(tasks: list[str] | None) -> list[str]:
    return [TASKS.canonical(t) for t in tasks] if tasks else list(SUITES.get("sts-all").tasks)


def _evaluate_variant(model: str, v: Variant, tasks: list[str], common: dict[str, Any]) -> dict[str, float]:
    batch = v.knobs.get("batch_size", BASELINE_BATCH)
    extra: dict[str, Any] = {}
    if "batch_size" in v.knobs:
        # Same protocol and encoder as the baseline: bypass the cache and the stored records.
        extra = {"use_cache": False, "save": False}
    ev = evaluate(model, None, tasks=tasks, batch_size=batch, **common, **extra, **v.protocol(), **v.model_options())
    return {r.display: r.main_score for r in ev.records}


def audit(
    model: str,
    *,
    knobs: list[str] | None = None,
    tasks: list[str] | None = None,
    reported: dict[str, float] | None = None,
    tolerance: float = 0.01,
    data: str | Path | None = None,
    results_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    device: str | None = None,
) -> AuditResult:
    """Evaluate ``model`` under every protocol variant; optionally match ``reported`` numbers (x100)."""
    knobs = list(knobs) if knobs else list(KNOBS)
    task_names = _task_list(tasks)
    common = {"data": data, "results_dir": results_dir, "cache_dir": cache_dir, "device": device}
    load_model(model, device=device)  # fail early, with the list of what was tried, on a bad name
    vs = variants(knobs)
    rows = {}
    for v in vs:
        rows[v.label] = _evaluate_variant(model, v, task_names, common)
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame["Avg."] = frame.mean(axis=1)
    frame.index.name = "protocol"
    effects = knob_effects(frame, vs)
    result = AuditResult(model=model, tasks=task_names, rows=frame, variants=vs, knob_effects=effects)
    if reported:
        result.reported = reported
        result.matches = match_reported(model, reported, tolerance, common, knobs)
        result.verdict = verdict(result.matches, tolerance)
    return result


def knob_effects(frame: pd.DataFrame, vs: list[Variant]) -> pd.DataFrame:
    """Per knob: the largest change of Avg. over its values, and its largest per-task change."""
    base = frame.loc["baseline"]
    tasks = [c for c in frame.columns if c != "Avg."]
    out = []
    for knob in dict.fromkeys(k for v in vs for k in v.knobs):
        own = [v for v in vs if list(v.knobs) == [knob]]
        if not own:
            continue
        best_avg, best_task = None, None
        for v in own:
            d = frame.loc[v.label] - base
            if best_avg is None or abs(d["Avg."]) > abs(best_avg[1]):
                best_avg = (v.knobs[knob], float(d["Avg."]))
            t = max(tasks, key=lambda c: abs(d[c]) if not math.isnan(d[c]) else -1)
            if best_task is None or abs(d[t]) > abs(best_task[2]):
                best_task = (v.knobs[knob], t, float(d[t]))
        out.append({
            "knob": knob,
            "value": str(best_avg[0]),
            "delta_avg": best_avg[1],
            "largest_task": best_task[1],
            "largest_task_value": str(best_task[0]),
            "delta_task": best_task[2],
        })
    eff = pd.DataFrame(out)
    if not eff.empty:
        eff = eff.reindex(eff["delta_avg"].abs().sort_values(ascending=False).index).reset_index(drop=True)
    return eff


# -- matching published numbers --------------------------------------------------------------
def parse_reported(text: str) -> dict[str, float]:
    """``"STS12=70.97 STS13=76.53 ..."`` or seven bare numbers in sts-all order (an eighth, Avg., is ignored)."""
    tokens = [t for t in re.split(r"[\s,;]+", text.strip()) if t]
    if not tokens:
        raise EmbenchError("--reported is empty")
    out: dict[str, float] = {}
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
            if name.lower() in ("avg", "avg."):
                continue
            if name not in TASKS:
                raise UnknownNameError("task in --reported", name, TASKS.names(), nearest(name, TASKS.names()))
            pairs.append((TASKS.canonical(name), value))
    for name, value in pairs:
        try:
            out[name] = float(value)
        except ValueError:
            raise EmbenchError(f"--reported: {value!r} (for {name}) is not a number") from None
    return out


def read_reported_file(path: str | Path) -> dict[str, float]:
    """A CSV of reported numbers: either rows ``task,value`` or a header of task names and one row."""
    p = Path(path)
    try:
        lines = [line for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError as e:
        raise EmbenchError(f"cannot read --reported-file {p}: {e.strerror}") from None
    rows = [[c.strip() for c in line.split(",")] for line in lines]
    if all(len(r) == 2 for r in rows):
        text = " ".join(f"{a}={b}" for a, b in rows if a.lower() not in ("task", "avg", "avg."))
    elif len(rows) >= 2:
        header, values = rows[0], rows[1]
        if len(values) != len(header):
            raise EmbenchError(f"{p}:2: {len(values)} values for {len(header)} columns")
        text = " ".join(f"{a}={b}" for a, b in zip(header, values, strict=True) if a and a.lower() not in ("model", "avg", "avg."))
    else:
        raise EmbenchError(f"{p}: expected rows 'task,value' or a header of task names and one row of values")
    return parse_reported(text)


def match_reported(model: str, reported: dict[str, float], tolerance: float, common: dict[str, Any], knobs: list[str]) -> pd.DataFrame:
    """Every protocol combination of the match grid, ranked by its distance to ``reported`` (x100)."""
    tasks = list(reported)
    grid_knobs = [k for k in MATCH_GRID if k in knobs]
    base = Protocol()
    encode_axes = [k for k in grid_knobs if k not in ("aggregation", "correlation")]
    rows = []
    for combo in itertools.product(*(KNOBS[k] for k in encode_axes)):
        proto = dict(zip(encode_axes, combo, strict=True))
        if proto.get("scoring") == "regressor" and proto.get("sick_split") == "full":
            continue  # the regressor trains on SICK's train split: no full-split variant exists
        ev = evaluate(model, None, tasks=tasks, **common, **proto)
        by_task = {r.task: r for r in ev.records}
        aggs = KNOBS["aggregation"] if "aggregation" in grid_knobs else [base.aggregation]
        corrs = KNOBS["correlation"] if "correlation" in grid_knobs else [base.correlation]
        for agg, corr in itertools.product(aggs, corrs):
            scores = {}
            for t in tasks:
                s = by_task[t].scores
                scores[t] = 100 * s[agg][corr]
            res = {t: round(scores[t], 2) - reported[t] for t in tasks}
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
    # Most cells reproduced first: a protocol that gives six of seven numbers exactly (and one typo) is a
    # better explanation than one that is off by a little everywhere.
    frame = pd.DataFrame(rows)
    frame["_neg_within"] = -frame["n_within"]
    frame = frame.sort_values(["_neg_within", "max_abs", "mean_abs", "changed"], kind="stable")
    frame = frame.drop(columns="_neg_within").reset_index(drop=True)
    frame["match"] = frame["max_abs"] <= tolerance + 1e-9
    return frame


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


# -- checking published tables ---------------------------------------------------------------
_MARKS = re.compile(r"\\textbf\{|\\underline\{|\\emph\{|[{}$*♣♥♠♦†‡§¶⋆★∗]|\\(dagger|ddagger|star|diamond|clubsuit|heartsuit|spadesuit)|\\")


@dataclass
class TableIssue:
    table: int
    row: int  # 1-based line in the file
    name: str
    kind: str  # "average" or "duplicate"
    message: str


def _number(cell: str) -> float | None:
    s = _MARKS.sub("", cell).strip().rstrip("%")
    s = re.split(r"±|\\pm|\+-", s)[0].strip()  # "79.39±0.30": the mean of several seeds
    if not any(ch.isdigit() for ch in s):
        return None  # "-", "n/a", "(missing in text)": no number printed

    return float(s)


def _is_number(cell: str) -> bool:
    try:
        return _number(cell) is not None
    except ValueError:
        return False


def _tables(path: Path) -> list[list[tuple[int, list[str]]]]:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    tables: list[list[tuple[int, list[str]]]] = []
    if path.suffix == ".csv":
        import csv

        return [[(i, row) for i, row in enumerate(csv.reader(lines), start=1) if row]]
    if path.suffix == ".tex" or "\\begin{tabular" in text:
        current: list[tuple[int, list[str]]] = []
        for i, line in enumerate(lines, start=1):
            if "\\begin{tabular" in line:
                current = []
            elif "\\end{tabular" in line:
                tables.append(current)
            elif "&" in line:
                cells = [c.strip() for c in line.split("\\\\")[0].split("&")]
                current.append((i, cells))
        return tables
    current = []
    for i, line in enumerate(lines, start=1):
        if line.lstrip().startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if all(re.fullmatch(r":?-{2,}:?", c) for c in cells if c):
                continue
            current.append((i, cells))
        elif current:
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    return tables


def check_table(path: str | Path, tolerance: float = 0.01) -> list[TableIssue]:
    """Recompute every printed average of every table in ``path``; flag values duplicated in a row.

    A column whose header contains "avg" averages the numeric columns since the previous average
    column (or the first data column): JTCSE's tables print a "7 Avg." and a "3 Avg.". The first column
    names the row unless every row holds a number there (a table of scores only, as in BeLLM's README). A printed
    average is flagged when it differs from the mean of its cells by more than ``tolerance`` (two
    roundings of 0.005 each).
    """
    p = Path(path)
    if not p.is_file():
        raise EmbenchError(f"table file {p} does not exist")
    issues: list[TableIssue] = []
    for t_index, table in enumerate(_tables(p), start=1):
        if len(table) < 2:
            continue
        header = [h.lower() for h in table[0][1]]
        avg_cols = [j for j, h in enumerate(header) if "avg" in h]
        if not avg_cols:
            continue
        rows = [cells for _, cells in table[1:] if len(cells) >= len(header) and any(c.strip() for c in cells)]
        labelled = not rows or not all(_is_number(cells[0]) for cells in rows)  # a table of numbers only has no name column
        groups, start = [], 1 if labelled else 0
        for j in avg_cols:
            groups.append((j, list(range(start, j))))
            start = j + 1
        for line_no, cells in table[1:]:
            if len(cells) < len(header) or not any(c.strip() for c in cells[1:]):
                continue  # section headings
            name = _MARKS.sub("", cells[0]).strip() if labelled else "unlabelled row"
            values: dict[int, float | None] = {}
            unreadable: list[int] = []
            for j in sorted({c for _, cols in groups for c in cols} | set(avg_cols)):
                try:
                    values[j] = _number(cells[j])
                except ValueError:
                    values[j] = None
                    unreadable.append(j)
            if unreadable:
                if all(v is None for v in values.values()):
                    continue  # a section heading spread over the columns
                j = unreadable[0]
                raise EmbenchError(f"{p}:{line_no}: column {j + 1} ({table[0][1][j]!r}) of row {name!r}: cannot read {cells[j]!r} as a number")
            for avg_j, cols in groups:
                printed = values.get(avg_j)
                cells_v = [values[c] for c in cols]
                if printed is None or len(cols) < 2 or any(v is None for v in cells_v):
                    continue
                mean = float(np.mean(cells_v))
                if abs(mean - printed) > tolerance + 1e-9:
                    issues.append(TableIssue(t_index, line_no, name, "average", f"printed {table[0][1][avg_j]} {printed:.2f}, mean of its {len(cols)} cells {mean:.2f}"))
            seen: dict[float, int] = {}
            for j in (c for _, cols in groups for c in cols):
                v = values.get(j)
                if v is None:
                    continue
                if v in seen:
                    issues.append(TableIssue(t_index, line_no, name, "duplicate", f"{v:.2f} appears under both {table[0][1][seen[v]]!r} and {table[0][1][j]!r}"))
                seen.setdefault(v, j)
    return issues


def audit_to_json(result: AuditResult) -> str:
    out = {
        "model": result.model,
        "tasks": result.tasks,
        "rows": json.loads(result.rows.reset_index().to_json(orient="records")),
        "knob_effects": json.loads(result.knob_effects.to_json(orient="records")),
        "reported": result.reported,
        "verdict": result.verdict,
        "matches": json.loads(result.matches.head(20).to_json(orient="records")) if result.matches is not None else None,
    }
    return json.dumps(out, indent=2)
