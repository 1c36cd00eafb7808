"""Protocol audit: one model under every protocol variant, and how far each knob moves the scores.

The audit varies one knob at a time from a baseline (:mod:`embench.audit.knobs`), plus the full
aggregation x correlation grid of SimCSE's Table B.2. Every evaluation goes through
:func:`embench.evaluate`, so each distinct encoding is computed once (the embedding cache) and the
rest is re-scoring; the baseline and every pooling share one forward pass, and the batch-size knob
re-encodes a seeded sample (:mod:`embench.audit.passes`). Matching published numbers is
:mod:`embench.audit.reported`.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..api import evaluate
from ..core.arguments import name_list
from ..core.boundary import python_api
from ..data.root import DataRoot
from ..encoding.cache import default_cache_dir
from ..evaluation.suites import SUITES
from ..models.devices import several_devices
from ..models.loader import load_model
from ..models.precision import native_precision
from ..report.json_records import frame_records, plain
from ..tasks import TASKS
from .audit_arguments import check_audit_arguments, checked_reported
from .dimensions import VECTOR_KNOBS, dimension_grid, sweep, undefined_as_empty, vector_variants
from .knobs import KNOBS, Variant, knob_name, variants
from .passes import (
    DEFAULT_SAMPLE,
    PassLog,
    retokenised_texts,
    sample_texts,
    sampled_note,
    sampled_variant,
    shared_pass,
    suite_texts,
)
from .reported import match_reported, regressor_lines, verdict


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
    passes: PassLog = field(default_factory=PassLog)  # every forward pass, and why
    sample_note: str | None = None  # how the sampled rows were made
    sample_diffs: dict[str, float] = field(default_factory=dict)  # sampled row -> largest |change| of a coordinate
    dimensions: pd.DataFrame | None = None  # (precision, dim) -> every task's score and Avg. (audit/dimensions.py)


def _task_list(tasks: str | list[str] | None) -> list[str]:
    """The tasks audited (one name or several; default sts-all's)."""
    return [TASKS.canonical(t) for t in name_list(tasks, "tasks")] if tasks else list(SUITES.get("sts-all").tasks)


def _evaluate_variant(model: str | Any, v: Variant, tasks: list[str], common: dict[str, Any],
                      extra: dict[str, Any]) -> tuple[dict[str, float], Any]:
    if not isinstance(model, (str, Path)):  # an encoder object (a sampled variant) carries its own settings
        common = {k: v for k, v in common.items()
                  if k not in ("device", "prompt", "dtype", "bidirectional_last", "bidirectional_mode", "adapter", "batch_tokens",
                               "compile", "cuda_graphs", "unpadded")}
    own = v.model_options() if isinstance(model, (str, Path)) else {}
    ev = undefined_as_empty(v, lambda: evaluate(model, None, tasks=tasks, **{**common, **own}, **extra, **v.protocol()))
    return {r.display: r.main_score for r in ev.records}, ev  # (a knob's dtype over the baseline's)


def _encoded(ev: Any, log: PassLog, label: str) -> str:
    """How many texts a variant encoded and how fast, for its progress line."""
    own = [r for r in log.rows if r["pass"] == label or r["pass"].startswith(f"{label} (")]  # "(sample)", ...
    if not own:
        return "every vector from the shared pass or the cache"
    return f"{own[-1]['texts']:,} texts encoded, {own[-1]['texts'] / max(own[-1]['seconds'], 1e-3):.0f} texts/s"


def _why_full_pass(v: Variant) -> str:
    knob, value = next(iter(v.knobs.items()))
    return {"max_length": "a shorter maximum length changes the tokenisation itself",
            "dtype": f"{value} is native on this device: a full pass costs no more than fp32",
            "batch_size": "--full-batch-check"}.get(knob, "a different encoder setting")


@python_api("audit")  # its errors name knobs, ci=95, not the command line's --knobs, --ci 95
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
    prompt_name: str | None = None,
    revision: str | None = None,
    dtype: str | None = None,
    batch_size: int | None = None,
    batch_tokens: int | None = None,
    compile: bool | None = None,
    cuda_graphs: bool | None = None,
    unpadded: bool | None = None,
    bidirectional_last: int | None = None,
    bidirectional_mode: str | None = None,
    adapter: str | Path | None = None,
    truncate_dim: list[int] | None = None,
    quantize: list[str] | None = None,
    ci: float | None = None,
    resamples: int | None = None,
    sample: int = DEFAULT_SAMPLE,
    sample_seed: int = 42,
    full_batch_check: bool = False,
    full_dtype_check: bool = False,
    full_length_check: bool = False,
    progress: bool = False,
    on_step: Callable[[str], None] | None = None,
) -> AuditResult:
    """Evaluate ``model`` under every protocol variant; optionally match ``reported`` numbers (x100).

    ``prompt`` (a template with ``{text}``) or ``prompt_name`` (one of the model's) wraps every text in every variant,
    as ``load_model`` applies it, as does ``revision`` (a hub revision);
    ``dtype`` and ``batch_size`` are the baseline's (the dtype and batch-size knobs vary them).
    ``ci`` (e.g. 95) draws the baseline's bootstrap intervals and says, per knob, whether its effect
    leaves them (beyond the noise of the test sets) or not. The baseline and every pooling come from
    one forward pass; the batch-size knob (and bf16/fp16 on a CPU without native arithmetic) re-encode
    a seeded ``sample`` of texts unless ``full_batch_check`` / ``full_dtype_check``; a shorter
    ``max_length`` re-encodes only the texts it truncates unless ``full_length_check``
    (:mod:`embench.audit.passes`). ``on_step`` receives a line per step (which variant, which pass).
    ``truncate_dim`` and ``quantize`` are the values of the truncate-dim and quantize knobs (default: the powers of
    two below the vectors' length, every quantised precision); with either knob, ``dimensions`` holds the score of
    every dimension x precision (:mod:`embench.audit.dimensions`, whose ``dimension_figure`` draws it).
    """
    # (Over 60 lines with its signature and docstring; the body is the audit's order of work.)
    say = on_step or (lambda _msg: None)
    knobs = [knob_name(k) for k in name_list(knobs, "knobs")] if knobs else list(KNOBS)  # as the options spell them too
    task_names, reported = _task_list(tasks), checked_reported(reported)
    check_audit_arguments(tolerance, sample, sample_seed, truncate_dim, quantize, knobs, batch_size, batch_tokens, ci, resamples)
    devices = several_devices(device)  # cuda:0,cuda:1 or all: every full pass is split over one process per device
    load_opts = {k: v for k, v in (("device", devices[0] if devices else device), ("prompt", prompt), ("dtype", dtype),
                                   ("prompt_name", prompt_name), ("revision", revision),
                                   ("bidirectional_last", bidirectional_last), ("bidirectional_mode", bidirectional_mode),
                                   ("adapter", adapter),
                                   ("batch_tokens", batch_tokens), ("compile", compile), ("cuda_graphs", cuda_graphs),
                                   ("unpadded", unpadded)) if v is not None}
    common = {"data": data, "results_dir": results_dir, "cache_dir": cache_dir, "progress": progress, **load_opts,
              **({"device": device} if devices else {})}  # evaluate() splits a variant's full pass itself
    base = load_model(model, **load_opts)  # fail early, with the list of what was tried, on a bad name
    vs = variants(knobs, base.config, bool(getattr(base, "settings", None) and base.settings.extra.get("bidirectional_last")))
    root = DataRoot.resolve(data)
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    log = PassLog()
    say(f"audit of {base.name}: {len(vs)} variants over {len(task_names)} task(s)")
    protocols = [v.protocol() for v in vs if not v.model_options() and "batch_size" not in v.knobs]
    baseline_texts = suite_texts(task_names, [{}], root)
    others, varied = [t for t in reported or {} if t not in task_names], [p for p in protocols if p]  # others: matched
    all_texts = list(dict.fromkeys(baseline_texts + suite_texts(task_names, varied, root)  # too, in this logged pass
                                   + suite_texts(others, [{}, *varied], root)))
    poolings = [p for v in vs if (p := v.model_options().get("pooling")) and len(v.knobs) == 1]
    say(f"shared pass: the baseline{' and pooling ' + ', '.join(poolings) if poolings else ''} over {len(all_texts):,} texts")
    base_engine = shared_pass(base, poolings, all_texts, cache, batch_size, progress, log, devices)
    say(f"shared pass: done ({_encoded(None, log, 'baseline + pooling views')})")
    dims, precisions = sweep(base_engine.dim, truncate_dim, quantize)  # the truncate-dim and quantize knobs' values
    if added := vector_variants(knobs, dims, precisions):
        vs += added
        say(f"and {len(added)} variants of the vectors' {base_engine.dim} dimensions: {', '.join(v.label for v in added)}")
    picked = sample_texts(baseline_texts, sample, sample_seed)
    rows, intervals, note, diffs = {}, {}, None, {}
    for i, v in enumerate(vs, 1):
        start = time.perf_counter()
        knob, value = next(iter(v.knobs.items())) if len(v.knobs) == 1 else (None, None)
        with_ci = {"ci": ci, "resamples": resamples} if ci is not None and v.label == "baseline" else {}
        emulated = knob == "dtype" and value != "fp32" and not native_precision(base.device, value)
        changed = shorter = None  # a shorter maximum length: only the texts it truncates are encoded again
        if knob == "max_length" and value is not None and not full_length_check:
            shorter = load_model(model, **{**load_opts, "max_length": value})
            changed = retokenised_texts(base, shorter, baseline_texts)
        if (knob == "batch_size" and not full_batch_check) or (emulated and not full_dtype_check):
            say(f"[{i}/{len(vs)}] {v.label}: re-encoding a seeded sample of {len(picked):,} texts")
            encoder = base if knob == "batch_size" else load_model(model, **{**load_opts, "dtype": value})
            why = ("does a vector depend on its batch? (a sample: --full-batch-check for every text)" if knob == "batch_size"
                   else f"{value} is emulated on this CPU, about 6x slower than fp32 (a sample: --full-dtype-check for every text)")
            sampled, diffs[v.label] = sampled_variant(base_engine, encoder, value if knob == "batch_size" else batch_size,
                                                      picked, knob, value, baseline_texts, progress, log, why)
            rows[v.label], ev = _evaluate_variant(sampled, v, task_names, common, {"save": False, "use_cache": False})
        elif changed is not None:
            say(f"[{i}/{len(vs)}] {v.label}: re-encoding the {len(changed):,} texts whose tokens it changes")
            why = (f"only the texts longer than {value} tokens change; the other {len(baseline_texts) - len(changed):,} "
                   "keep the baseline's vectors, from the same token ids (--full-length-check for every text)")
            truncated, _ = sampled_variant(base_engine, shorter, batch_size, changed, knob, value, baseline_texts,
                                           progress, log, why, what="truncated texts")
            rows[v.label], ev = _evaluate_variant(truncated, v, task_names, common, {"save": False, "use_cache": False})
        else:
            trained = [t for t in task_names if t in ("STSBenchmark", "SICKRelatedness")]
            if knob == "scoring" and value == "regressor" and trained:  # tens of seconds of training, no count to show
                say(f"[{i}/{len(vs)}] {v.label}: training SentEval's regressor on the frozen vectors of {', '.join(trained)}")
            # a batch-size check over every text bypasses the cache and the records: encoding is what it measures
            extra = {"use_cache": False, "save": False} if knob == "batch_size" else {}
            if knob == "scoring" and value == "regressor" and trained:
                extra["on_task"] = regressor_lines(say, f"[{i}/{len(vs)}] {v.label}:")
            rows[v.label], ev = _evaluate_variant(model, v, task_names, common,
                                                  {**extra, **with_ci, "batch_size": value if knob == "batch_size" else batch_size})
            if ev.encode_stats.get("encoded", 0):
                log.add(v.label, ev.encode_stats["encoded"], 1, ev.encode_stats["encode_seconds"], _why_full_pass(v))
        say(f"[{i}/{len(vs)}] {v.label}: done in {time.perf_counter() - start:.1f} s ({_encoded(ev, log, v.label)})")
        if with_ci:
            intervals = {col: iv for (_, col), iv in ev.intervals.items()}
            note = ev.interval_note()
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame["Avg."] = frame.mean(axis=1, skipna=False)  # over every task: a row with an undefined task has none
    frame.index.name = "protocol"
    effects = knob_effects(frame, vs, intervals)
    result = AuditResult(model=model, tasks=task_names, rows=frame, variants=vs, knob_effects=effects,
                         baseline_intervals=intervals, interval_note=note, passes=log,
                         sample_note=sampled_note(diffs, len(picked), sample_seed), sample_diffs=diffs)
    if set(knobs) & set(VECTOR_KNOBS):  # every dimension x precision, scored from the same vectors
        result.dimensions = dimension_grid(model, task_names, common, base_engine.dim, dims, precisions, say)
    say(log.summary())
    if reported:
        result.reported = reported
        result.matches = match_reported(model, reported, tolerance, common, knobs, on_step=on_step)
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
            if best_avg is None or math.isnan(best_avg[1]) or abs(d["Avg."]) > abs(best_avg[1]):
                best_avg = (v.knobs[knob], float(d["Avg."]), float(frame.loc[v.label, "Avg."]))
            t = max(tasks, key=lambda c: abs(d[c]) if not math.isnan(d[c]) else -1)
            if best_task is None or abs(d[t]) > abs(best_task[2]):
                best_task = (v.knobs[knob], t, float(d[t]), float(frame.loc[v.label, t]))
        row = {"knob": knob, "value": str(best_avg[0]), "delta_avg": best_avg[1], "largest_task": best_task[1],
               "largest_task_value": str(best_task[0]), "delta_task": best_task[2]}
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
        "rows": frame_records(result.rows.reset_index()),
        "knob_effects": frame_records(result.knob_effects),
        "baseline_intervals": {k: list(v) for k, v in result.baseline_intervals.items()} or None,
        "interval_note": result.interval_note,
        "sample_note": result.sample_note,
        "sample_max_abs_diff": result.sample_diffs or None,
        "forward_passes": result.passes.rows,
        "reported": result.reported,
        "verdict": result.verdict,
        "dimensions": None if result.dimensions is None else frame_records(result.dimensions.reset_index()),
        "matches": frame_records(result.matches.head(20)) if result.matches is not None else None,
    }
    return json.dumps(plain(out), indent=2)
