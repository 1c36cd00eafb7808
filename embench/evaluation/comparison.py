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
A seed group on either side is compared by the hierarchical bootstrap of :mod:`.seed_comparison` instead.
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


def _steiger(a: Items, b: Items) -> tuple[float, float, str | None]:
    """Steiger's p and the difference it tests, Pearson's r(A, gold) - r(B, gold) on all pairs pooled; or NaN and why
    it is undefined (3 pairs or fewer, a perfect or an undefined correlation): a small task must not stop the
    bootstrap and permutation tests, for which Steiger's column is only informational."""
    if a.kind != "correlation":
        return float("nan"), float("nan"), None
    x, y, g = np.concatenate(a.values), np.concatenate(b.values), np.concatenate(a.gold)
    r_a, r_b, r_ab = (float(weighted_pearson(u, v)) for u, v in ((x, g), (y, g), (x, y)))
    if not all(np.isfinite([r_a, r_b, r_ab])):
        return float("nan"), float("nan"), "a Pearson correlation is undefined (the similarities or the gold scores are all equal)"
    try:
        return steiger_test(r_a, r_b, r_ab, len(g))[1], r_a - r_b, None
    except ValueError as e:
        return float("nan"), float("nan"), str(e)


def _steiger_note(tested: dict[str, tuple[float, float]]) -> str | None:
    """Why p steiger can disagree with the other tests: per task whose score is no pooled Pearson r (``tested``: its
    score difference and the Pearson difference Steiger tested), the note says so and names the tasks where the two
    differences have opposite signs (STS-B, MiniLM with and without ``query: ``: Spearman -0.14, Pearson +0.70)."""
    if not tested:
        return None
    flipped = [f"{t} ({100 * dp:+.2f} against {100 * d:+.2f})" for t, (d, dp) in tested.items() if d * dp < 0]
    return ("p steiger tests Pearson's r on all pairs pooled (Steiger 1980, Eq. 14, is defined for Pearson's r), not the "
            "protocol's scores in A, B and diff, which the bootstrap and permutation tests resample, so it can disagree "
            "with them" + (f"; Pearson's difference has the other sign on {', '.join(flipped)}" if flipped else "") + ".")


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
    warnings: list[str] = field(default_factory=list)  # what the CLI prints on stderr, one line each (few seeds)
    names: dict[str, str] = field(default_factory=dict)  # a task's other names (its own, its aliases) -> its row

    def verdict(self, task: str = "Avg.") -> str:
        """The verdict on ``task``: "A better", "B better", "no significant difference" or "n/a" (no p-value).

        ``task`` is a row of :attr:`frame` (the table's name, ``STS-B``), the task's own name (``STSBenchmark``) or an
        alias as ``-t`` takes them (``STSB``), in any case; ``Avg.`` (the default) is the verdict on the average."""
        return str(self.frame.loc[self.row(task), "verdict"])

    def row(self, task: str) -> str:
        """The row of :attr:`frame` that ``task`` names (see :meth:`verdict`); an unknown name lists the rows."""
        rows = {str(r).lower(): str(r) for r in self.frame.index}
        found = rows.get(str(task).lower()) or {k.lower(): v for k, v in self.names.items()}.get(str(task).lower())
        if found is None:
            raise EmbenchError(f"task {task!r} was not compared; the comparison has {', '.join(map(str, self.frame.index))}")
        return found


def verdict_of(diff: float, p: float, alpha: float) -> str:
    if not np.isfinite(p):
        return "n/a"
    if p >= alpha:
        return "no significant difference"
    return "A better" if diff > 0 else "B better"


def check_test(test: str, alpha: float, kinds: dict[str, str] | None = None) -> None:
    """The test and level, and (``kinds``: task -> kind, where known before encoding) tasks the test can compare:
    called before either model loads, so that a typo costs no encoding."""
    if test not in TESTS:
        raise EmbenchError(f"--test {test!r}: choose one of {', '.join(TESTS)}")
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha < 1:
        raise EmbenchError(f"--alpha {alpha!r}: a significance level between 0 and 1, such as 0.05")
    for task, kind in (kinds or {}).items():
        if kind == "mteb":  # mteb's evaluators hand back scores, not the outcome of each item a paired test resamples
            raise EmbenchError(f"{task}: an MTEB task keeps no per-item outcomes, so it cannot be compared; compare "
                               "embench's own tasks (the STS and SentEval ones, task files)")
        if kind == "transfer" and test == "steiger":
            raise EmbenchError(f"--test steiger compares two correlations with one gold; {task} is scored by accuracy: "
                               "use --test bootstrap or permutation")


def compare_sides(pairs: Sequence[tuple[Side, Side]], settings: IntervalSettings, test: str = "bootstrap",
                  alpha: float = 0.05, names: Sequence[str] | None = None) -> Comparison:
    """Paired tests of A against B on every task of ``pairs``, Holm across tasks, and Avg. ``names``: the two sides
    as the table names them (default their records' model; one model under two settings: :mod:`.side_settings`)."""
    check_test(test, alpha)
    name_a, name_b = names or (pairs[0][0].record.model, pairs[0][1].record.model)
    rows, diffs, no_steiger, other_metric = {}, [], {}, {}
    for a, b in pairs:
        check_comparable(a, b)
        p_steiger, pearson_diff, why = _steiger(a.items, b.items)  # before the resampling: --test steiger refuses at once
        if why is not None and test == "steiger":
            raise EmbenchError(f"{a.record.display}: --test steiger cannot compare this task: {why}; "
                               "use --test bootstrap or permutation")
        if why is not None:
            no_steiger[a.record.display] = why
        dist = distributions([a.record, b.record], [a.items, b.items], settings)
        d = dist[0] - dist[1]
        diffs.append(d)
        lo, hi = percentile_interval(d, settings.level)
        metric = metric_for(a.record, a.items)
        if np.isfinite(p_steiger) and (metric.correlation, metric.aggregation) != ("pearson", "all"):
            other_metric[a.record.display] = (a.record.main_score - b.record.main_score, pearson_diff)
        _, p_perm = paired_permutation_test(a.items.scored(), b.items.scored(), metric, settings.resamples,
                                            task_rng(settings.seed + 1, a.record.task))
        rows[a.record.display] = {
            "A": a.record.main_score, "B": b.record.main_score, "diff": a.record.main_score - b.record.main_score,
            "diff low": lo, "diff high": hi, "p bootstrap": paired_bootstrap_p(d), "p permutation": p_perm,
            "p steiger": p_steiger, "n": a.items.n,
        }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame["p holm"] = holm(frame[f"p {test}"].tolist())
    frame["verdict"] = [verdict_of(d, p, alpha) for d, p in zip(frame["diff"], frame["p holm"], strict=True)]
    avg_d = np.mean(np.stack(diffs), axis=0)
    lo, hi = percentile_interval(avg_d, settings.level)
    p_avg = paired_bootstrap_p(avg_d)
    frame.loc["Avg."] = {
        "A": frame["A"].mean(), "B": frame["B"].mean(), "diff": frame["diff"].mean(), "diff low": lo, "diff high": hi,
        "p bootstrap": p_avg, "p permutation": float("nan"), "p steiger": float("nan"), "n": int(frame["n"].sum()),
        "p holm": float("nan"), "verdict": verdict_of(frame["diff"].mean(), p_avg, alpha),
    }
    frame.index.name = "task"
    notes = [
        f"A = {name_a}, B = {name_b}; diff = A - B, with its paired "
        f"{settings.describe()}.",
        f"Verdict per task: the {test} test, Holm-corrected over {len(pairs)} task(s), at alpha {alpha:g}; "
        "Avg.: the paired bootstrap of the average difference.",
    ]
    steiger_note = _steiger_note(other_metric)  # whatever --test: the column sits beside every table, and a Spearman
    if steiger_note:  # score's p steiger was read as its own (p 0.099 beside a bootstrap p of 0.81, differences of opposite sign)
        notes.append(steiger_note)
    notes += [f"p steiger is empty for {task}: {why}." for task, why in no_steiger.items()]
    return Comparison(name_a, name_b, frame, test, alpha, settings, notes,
                      names={a.record.task: a.record.display for a, _ in pairs})


SCALED = ("A", "A std", "B", "B std", "diff", "diff low", "diff high")


def _p(x: float) -> str:
    return "" if not np.isfinite(x) else ("<0.001" if x < 0.001 else f"{x:.3f}")


def render_comparison(c: Comparison, fmt: str) -> str:
    """The comparison table (scores x100, p-values to three decimals) with its notes under it; in CSV, the notes
    (and the scale, which JSON says in its own field) as rows of their own (:func:`~embench.report.tables.csv_with_notes`)."""
    from ..report.tables import csv_with_notes, render

    frame = c.frame.copy()
    if fmt not in ("json", "csv"):
        for col in [k for k in frame.columns if k.startswith("p ")]:
            frame[col] = [_p(v) for v in frame[col]]
        for col in ("n", "A seeds", "B seeds"):
            if col in frame.columns:
                frame[col] = [str(int(v)) for v in frame[col]]
    scaled = [k for k in SCALED if k in frame.columns]
    if fmt == "json":  # says what it holds, as run's JSON does: the scale, the two models, the test, then the rows
        import json

        rows = json.loads(render(frame, "json"))
        return json.dumps({"scale": "fractions: 0.8203 is printed 82.03 in the tables (x100); p-values as they are",
                           "model_a": c.model_a, "model_b": c.model_b, "test": c.test, "alpha": c.alpha,
                           "notes": c.notes, "rows": rows}, indent=2)
    if fmt == "csv":  # p-values are not scaled: the CSV says so, as JSON's "scale" does
        scale = f"Scores x100 ({', '.join(scaled)}); p-values and n as they are."
        return csv_with_notes(render(frame, fmt, scaled=scaled), [scale, *c.notes], "comparison")
    return render(frame, fmt, scaled=scaled, note=" ".join(c.notes))
