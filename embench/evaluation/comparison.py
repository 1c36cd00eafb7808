"""Is model A better than model B? Paired tests per task over the same items, Holm across tasks, a verdict.

Per task, both records must be scored under the same protocol on the same items (their digests): the
test then works pair by pair. Three tests are run, one of them chosen for the verdict:

* ``bootstrap`` (default): the paired bootstrap (both models scored on the same resampled items, with
  the task's own stratification and aggregation); the difference's percentile interval and its p-value.
* ``permutation``: the paired permutation test (:mod:`embench.stats.permutation`), on the main metric.
* ``steiger``: Steiger's test of two dependent Pearson correlations sharing the gold scores, on all pairs
  pooled (:mod:`embench.stats.dependent_correlations`); STS tasks only.

The p-values of the chosen test are Holm-corrected for the number of tasks; ``Avg.`` gets its own paired
bootstrap (the average of per-task differences on each replicate) and is not part of the correction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core.errors import EmbenchError
from ..stats import (
    holm,
    paired_bootstrap_p,
    paired_permutation_test,
    percentile_interval,
    seed_t_test,
    steiger_test,
)
from ..stats.weighted import weighted_pearson
from .items import Items
from .results import Record
from .significance import IntervalSettings, distributions, metric_for, task_rng

TESTS = ("bootstrap", "permutation", "steiger")


@dataclass
class Side:
    """One model's record of a task, with its per-item outcomes."""

    record: Record
    items: Items | None


def check_comparable(a: Side, b: Side) -> None:
    """Refuse a paired test whose two scores do not measure the same thing, naming the difference."""
    task = a.record.display
    if a.record.task != b.record.task:
        raise EmbenchError(f"cannot pair {a.record.task} with {b.record.task}: different tasks")
    diff = {k for k in set(a.record.protocol) | set(b.record.protocol) if a.record.protocol.get(k) != b.record.protocol.get(k)}
    if diff:
        what = ", ".join(f"{k}: {a.record.protocol.get(k)!r} vs {b.record.protocol.get(k)!r}" for k in sorted(diff))
        raise EmbenchError(f"{task}: the two models were scored under different protocols ({what}); a paired test needs one protocol")
    for side in (a, b):
        if side.items is None:
            raise EmbenchError(f"{task}: {side.record.model} has no per-item outcomes (an MTEB task, or a record written "
                               "before they were kept); run it again with --overwrite to compare")
    if a.items.digest != b.items.digest or a.items.n != b.items.n:
        raise EmbenchError(f"{task}: the two models were scored on different items ({a.items.n} vs {b.items.n}, digest "
                           f"{a.items.digest} vs {b.items.digest}): different texts or gold scores (another data root or version?)")


def _steiger(a: Items, b: Items) -> float:
    if a.kind != "correlation":
        return float("nan")
    x, y, g = np.concatenate(a.values), np.concatenate(b.values), np.concatenate(a.gold)
    r_a, r_b, r_ab = (float(weighted_pearson(u, v)) for u, v in ((x, g), (y, g), (x, y)))
    return steiger_test(r_a, r_b, r_ab, len(g))[1]


@dataclass
class Comparison:
    """The per-task table (one row per task, then ``Avg.``) and what it rests on."""

    model_a: str
    model_b: str
    frame: pd.DataFrame
    test: str
    alpha: float
    settings: IntervalSettings
    notes: list[str] = field(default_factory=list)

    def verdict(self, task: str = "Avg.") -> str:
        return str(self.frame.loc[task, "verdict"])


def _verdict(diff: float, p: float, alpha: float) -> str:
    if not np.isfinite(p):
        return "n/a"
    if p >= alpha:
        return "no significant difference"
    return "A better" if diff > 0 else "B better"


def compare_sides(pairs: Sequence[tuple[Side, Side]], settings: IntervalSettings, test: str = "bootstrap",
                  alpha: float = 0.05) -> Comparison:
    """Paired tests of A against B on every task of ``pairs``, Holm across tasks, and Avg."""
    if test not in TESTS:
        raise EmbenchError(f"--test {test!r}: choose one of {', '.join(TESTS)}")
    if not 0 < alpha < 1:
        raise EmbenchError(f"--alpha {alpha!r}: a significance level between 0 and 1, such as 0.05")
    rows, diffs = {}, []
    for a, b in pairs:
        check_comparable(a, b)
        dist = distributions([a.record, b.record], [a.items, b.items], settings)
        d = dist[0] - dist[1]
        diffs.append(d)
        lo, hi = percentile_interval(d, settings.level)
        metric = metric_for(a.record, a.items)
        _, p_perm = paired_permutation_test(a.items.scored(), b.items.scored(), metric, settings.resamples,
                                            task_rng(settings.seed + 1, a.record.task))
        rows[a.record.display] = {
            "A": a.record.main_score, "B": b.record.main_score, "diff": a.record.main_score - b.record.main_score,
            "diff low": lo, "diff high": hi, "p bootstrap": paired_bootstrap_p(d), "p permutation": p_perm,
            "p steiger": _steiger(a.items, b.items), "n": a.items.n,
        }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame["p holm"] = holm(frame[f"p {test}"].tolist())
    frame["verdict"] = [_verdict(d, p, alpha) for d, p in zip(frame["diff"], frame["p holm"], strict=True)]
    avg_d = np.mean(np.stack(diffs), axis=0)
    lo, hi = percentile_interval(avg_d, settings.level)
    p_avg = paired_bootstrap_p(avg_d)
    frame.loc["Avg."] = {
        "A": frame["A"].mean(), "B": frame["B"].mean(), "diff": frame["diff"].mean(), "diff low": lo, "diff high": hi,
        "p bootstrap": p_avg, "p permutation": float("nan"), "p steiger": float("nan"), "n": int(frame["n"].sum()),
        "p holm": float("nan"), "verdict": _verdict(frame["diff"].mean(), p_avg, alpha),
    }
    frame.index.name = "task"
    notes = [
        f"A = {pairs[0][0].record.model}, B = {pairs[0][1].record.model}; diff = A - B, with its paired "
        f"{settings.describe()}.",
        f"Verdict per task: the {test} test, Holm-corrected over {len(pairs)} task(s), at alpha {alpha:g}; "
        "Avg.: the paired bootstrap of the average difference.",
    ]
    if test == "steiger" and any(s.record.protocol.get("correlation") != "pearson" for s, _ in pairs):
        notes.append("Steiger's test compares Pearson correlations on all pairs pooled; the scores shown are the protocol's.")
    return Comparison(pairs[0][0].record.model, pairs[0][1].record.model, frame, test, alpha, settings, notes)


def compare_seeds(name_a: str, scores_a: dict[str, list[float]], name_b: str, scores_b: dict[str, list[float]],
                  alpha: float = 0.05) -> Comparison:
    """Seeds of A against seeds of B (Welch's t-test) or against B's single score (one-sample), per task and Avg.

    ``scores_*`` map a task's column name to the main score of each seed (one score for a model
    without seeds); ``Avg.`` is tested over the seeds' own averages.
    """
    if len(scores_a.get("Avg.", [])) < 2 and len(scores_b.get("Avg.", [])) < 2:
        raise EmbenchError(f"a t-test over seeds needs at least two seeds of {name_a} or of {name_b}; "
                           "train them with `embench train ... --seeds 1-5`")
    rows = {}
    for task in scores_a:
        a, b = np.asarray(scores_a[task]), np.asarray(scores_b[task])
        many, other, sign = (a, b, 1.0) if a.size >= 2 else (b, a, -1.0)
        res = seed_t_test(many, other if other.size >= 2 else float(other[0]), what=task)
        rows[task] = {"A": a.mean(), "A std": a.std(ddof=1) if a.size > 1 else float("nan"), "A seeds": a.size,
                      "B": b.mean(), "B std": b.std(ddof=1) if b.size > 1 else float("nan"), "B seeds": b.size,
                      "diff": a.mean() - b.mean(), "t": sign * res["t"], "p t-test": res["p"]}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    tasks = [t for t in frame.index if t != "Avg."]
    frame["p holm"] = float("nan")
    frame.loc[tasks, "p holm"] = holm(frame.loc[tasks, "p t-test"].tolist())
    frame.loc["Avg.", "p holm"] = frame.loc["Avg.", "p t-test"]
    frame["verdict"] = [_verdict(d, p, alpha) for d, p in zip(frame["diff"], frame["p holm"], strict=True)]
    frame.index.name = "task"
    test = "Welch's t-test" if len(scores_a["Avg."]) > 1 and len(scores_b["Avg."]) > 1 else "one-sample t-test against the single model's score"
    notes = [f"A = {name_a}, B = {name_b}; scores are means over seeds, std the sample standard deviation.",
             f"Verdict: {test} over seeds, Holm-corrected over {len(tasks)} task(s), at alpha {alpha:g}; Avg. is tested on "
             "each seed's average."]
    return Comparison(name_a, name_b, frame, "t-test", alpha, IntervalSettings(), notes)


SCALED = ("A", "A std", "B", "B std", "diff", "diff low", "diff high")


def _p(x: float) -> str:
    return "" if not np.isfinite(x) else ("<0.001" if x < 0.001 else f"{x:.3f}")


def render_comparison(c: Comparison, fmt: str) -> str:
    """The comparison table (scores x100, p-values to three decimals) with its notes under it."""
    from ..report.tables import render

    frame = c.frame.copy()
    if fmt not in ("json", "csv"):
        for col in [k for k in frame.columns if k.startswith("p ")] + ["t"] * ("t" in frame.columns):
            frame[col] = [_p(v) if col != "t" else f"{v:.2f}" for v in frame[col]]
        for col in ("n", "A seeds", "B seeds"):
            if col in frame.columns:
                frame[col] = [str(int(v)) for v in frame[col]]
    scaled = [k for k in SCALED if k in frame.columns]
    return render(frame, fmt, scaled=scaled, note=" ".join(c.notes) if fmt not in ("json", "csv") else None)
