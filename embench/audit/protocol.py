"""Protocol audit: one model under every protocol variant, and how far each knob moves the scores.

The audit varies one knob at a time from a baseline (:mod:`embench.audit.knobs`), plus the full
aggregation x correlation grid of SimCSE's Table B.2. Every evaluation goes through
:func:`embench.evaluate`, so each distinct encoding is computed once (the embedding cache) and the
rest is re-scoring. Batch-size variants are the exception: they bypass the cache, since measuring
them means encoding again. Matching published numbers is :mod:`embench.audit.reported`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..api import evaluate
from ..evaluation.suites import SUITES
from ..models.loader import load_model
from ..tasks import TASKS
from .knobs import BASELINE_BATCH, KNOBS, Variant, variants
from .reported import match_reported, verdict


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
    baseline_intervals: dict[str, tuple[float, float]] = field(default_factory=dict)  # column -> the baseline's interval
    interval_note: str | None = None


def _task_list(tasks: list[str] | None) -> list[str]:
    return [TASKS.canonical(t) for t in tasks] if tasks else list(SUITES.get("sts-all").tasks)


def _evaluate_variant(model: str, v: Variant, tasks: list[str], common: dict[str, Any],
                      ci: dict[str, Any] | None = None) -> tuple[dict[str, float], Any]:
    batch = v.knobs.get("batch_size", BASELINE_BATCH)
    extra: dict[str, Any] = dict(ci or {})
    if "batch_size" in v.knobs:
        # Same protocol and encoder as the baseline: bypass the cache and the stored records.
        extra.update(use_cache=False, save=False)
    ev = evaluate(model, None, tasks=tasks, batch_size=batch, **common, **extra, **v.protocol(), **v.model_options())
    return {r.display: r.main_score for r in ev.records}, ev


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
    prompt: str | None = None,
    ci: float | None = None,
    resamples: int | None = None,
) -> AuditResult:
    """Evaluate ``model`` under every protocol variant; optionally match ``reported`` numbers (x100).

    ``prompt`` (a template with ``{text}``) wraps every text in every variant, as ``load_model`` applies it.
    ``ci`` (e.g. 95) draws the baseline's bootstrap intervals and says, per knob, whether its effect
    leaves them (beyond the noise of the test sets) or not.
    """
    knobs = list(knobs) if knobs else list(KNOBS)
    task_names = _task_list(tasks)
    common = {"data": data, "results_dir": results_dir, "cache_dir": cache_dir, "device": device, "prompt": prompt}
    load_model(model, device=device, prompt=prompt or "")  # fail early, with the list of what was tried, on a bad name
    vs = variants(knobs)
    rows, intervals, note = {}, {}, None
    for v in vs:
        with_ci = {"ci": ci, "resamples": resamples} if ci is not None and v.label == "baseline" else None
        rows[v.label], ev = _evaluate_variant(model, v, task_names, common, with_ci)
        if with_ci:
            intervals = {col: iv for (_, col), iv in ev.intervals.items()}
            note = ev.interval_note()
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame["Avg."] = frame.mean(axis=1)
    frame.index.name = "protocol"
    effects = knob_effects(frame, vs, intervals)
    result = AuditResult(model=model, tasks=task_names, rows=frame, variants=vs, knob_effects=effects,
                         baseline_intervals=intervals, interval_note=note)
    if reported:
        result.reported = reported
        result.matches = match_reported(model, reported, tolerance, common, knobs)
        result.verdict = verdict(result.matches, tolerance)
    return result


def beyond(value: float, interval: tuple[float, float] | None) -> str:
    """Whether a knob's score leaves the baseline's interval: ``yes``, ``no``, or empty without an interval."""
    if interval is None or math.isnan(value):
        return ""
    return "yes" if not interval[0] <= value <= interval[1] else "no"


def knob_effects(frame: pd.DataFrame, vs: list[Variant], intervals: dict[str, tuple[float, float]] | None = None) -> pd.DataFrame:
    """Per knob: the largest change of Avg. over its values, and its largest per-task change; with the
    baseline's ``intervals``, whether each of those leaves the baseline's interval (beyond noise)."""
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
                best_avg = (v.knobs[knob], float(d["Avg."]), float(frame.loc[v.label, "Avg."]))
            t = max(tasks, key=lambda c: abs(d[c]) if not math.isnan(d[c]) else -1)
            if best_task is None or abs(d[t]) > abs(best_task[2]):
                best_task = (v.knobs[knob], t, float(d[t]), float(frame.loc[v.label, t]))
        row = {
            "knob": knob,
            "value": str(best_avg[0]),
            "delta_avg": best_avg[1],
            "largest_task": best_task[1],
            "largest_task_value": str(best_task[0]),
            "delta_task": best_task[2],
        }
        if intervals:
            row["avg_beyond_noise"] = beyond(best_avg[2], intervals.get("Avg."))
            row["task_beyond_noise"] = beyond(best_task[3], intervals.get(best_task[1]))
        out.append(row)
    eff = pd.DataFrame(out)
    if not eff.empty:
        eff = eff.reindex(eff["delta_avg"].abs().sort_values(ascending=False).index).reset_index(drop=True)
    return eff


def audit_to_json(result: AuditResult) -> str:
    out = {
        "model": result.model,
        "tasks": result.tasks,
        "rows": json.loads(result.rows.reset_index().to_json(orient="records")),
        "knob_effects": json.loads(result.knob_effects.to_json(orient="records")),
        "baseline_intervals": {k: list(v) for k, v in result.baseline_intervals.items()} or None,
        "interval_note": result.interval_note,
        "reported": result.reported,
        "verdict": result.verdict,
        "matches": json.loads(result.matches.head(20).to_json(orient="records")) if result.matches is not None else None,
    }
    return json.dumps(out, indent=2)
