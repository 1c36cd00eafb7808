"""A seed group against a model, or against another seed group: a bootstrap over both seeds and items.

A seed group (``train --seeds``) is scored as the mean over its seeds. That mean varies with the seeds
that were trained and with the test items that were drawn. A t-test over seeds sees only the first: two
seeds that agree to the third decimal give t = -1017 on df = 1 against a model whose score differs by
less than the test set's own noise. The test here carries both, by the hierarchical (two-stage)
bootstrap of Davison & Hinkley, *Bootstrap Methods and their Application* (1997), §3.8
(:mod:`embench.stats.hierarchical`). Per task and per replicate:

1. each side resamples its own seeds with replacement (a single model is a side of one seed);
2. the items are resampled once, for both sides, as the paired bootstrap does (STS pairs within each
   subset, transfer test examples), so the comparison stays paired;
3. every drawn seed is scored on those items under the record's protocol; a side's score is the mean
   over its drawn seeds, and the replicate's difference is A - B.

The difference's percentile interval and its two-sided p-value take the paired bootstrap's form
(:func:`~embench.stats.paired_bootstrap_p`), Holm-corrected over tasks. When every seed of a group
has the same outcomes, the test is exactly the paired item bootstrap of ``compare``.

The items of a task come from that task's stream, the one the paired bootstrap uses. The seeds of
a side come from one stream per side, shared by every task, because a seed is one trained model on
every task: replicate r of ``Avg.`` averages the tasks' differences for one draw of models.

Fewer than three seeds give a poor estimate of the seed variance (two seeds allow three distinct
draws), so such a group is warned about, in the table's notes and as a :class:`FewSeedsWarning`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.errors import EmbenchError
from ..report.counts import counted
from ..stats import draw_seeds, hierarchical_distributions, holm, paired_bootstrap_p, percentile_interval
from .comparison import Comparison, Side, check_comparable, verdict_of
from .items import Items
from .results import Record
from .significance import IntervalSettings, metric_for, task_rng

METHOD = "hierarchical bootstrap"  # names the test in the table's p-value column, its notes and Comparison.test
MIN_SEEDS = 3


class FewSeedsWarning(UserWarning):
    """A seed group with fewer than :data:`MIN_SEEDS` seeds: its seed variance is poorly estimated."""


@dataclass
class SeedSide:
    """One side of a comparison: a seed group, or a single model (one seed, ``group`` False)."""

    name: str
    tasks: dict[str, list[Side]]  # task column -> one Side per seed, the seeds in the same order on every task
    group: bool = True

    @property
    def n_seeds(self) -> int:
        return len(next(iter(self.tasks.values()), []))

    def seed_scores(self, task: str) -> np.ndarray:
        return np.array([s.record.main_score for s in self.tasks[task]])


def seed_side(name: str, records: Sequence[Record], items: Mapping[tuple[str, str], Items], group: bool) -> SeedSide:
    """A side from an evaluation's records (every seed's, or the model's) and per-item outcomes keyed (model, task)."""
    models = list(dict.fromkeys(r.model for r in records))
    by_task: dict[str, dict[str, Side]] = {}
    for r in records:
        by_task.setdefault(r.display, {})[r.model] = Side(r, items.get((r.model, r.task)))
    for task, sides in by_task.items():
        if len(sides) != len(models):
            raise EmbenchError(f"{task}: only {len(sides)} of the {len(models)} seeds of {name} have a result")
    return SeedSide(name, {task: [sides[m] for m in models] for task, sides in by_task.items()}, group)


def few_seeds_message(side: SeedSide) -> str:
    return (f"{side.name} has only {side.n_seeds} seed(s): its seed variance is poorly estimated; "
            "train more with --seeds (e.g. `embench train ... --seeds 1-5`, finished seeds are kept)")


def _std(x: np.ndarray) -> float:
    return float(x.std(ddof=1)) if x.size > 1 else float("nan")


def check_group_test(test: str) -> None:
    """Refuse another --test for a seed group: the permutation and Steiger tests see one model per side."""
    if test != "bootstrap":
        raise EmbenchError(f"--test {test}: a seed group is compared by the {METHOD} over seeds and items, "
                           "the one test here that carries both sources of variance; leave --test out")


def compare_seed_groups(a: SeedSide, b: SeedSide, settings: IntervalSettings, test: str = "bootstrap",
                        alpha: float = 0.05) -> Comparison:
    """A against B on every task, at least one a seed group: the hierarchical bootstrap, Holm across tasks, and Avg."""
    check_group_test(test)
    if not 0 < alpha < 1:
        raise EmbenchError(f"--alpha {alpha!r}: a significance level between 0 and 1, such as 0.05")
    if list(a.tasks) != list(b.tasks):
        raise EmbenchError(f"{a.name} and {b.name} were scored on different tasks: {list(a.tasks)} vs {list(b.tasks)}")
    few = [few_seeds_message(s) for s in (a, b) if s.group and s.n_seeds < MIN_SEEDS]
    for message in few:
        warnings.warn(message, FewSeedsWarning, stacklevel=2)
    draws = [draw_seeds(s.n_seeds, settings.resamples, task_rng(settings.seed, f"seeds of side {i}"))
             for i, s in enumerate((a, b))]
    rows, diffs = {}, []
    for task, sides_a in a.tasks.items():
        sides_b = b.tasks[task]
        for x in sides_a:  # every seed of A against every seed of B: one protocol, one set of items
            for y in sides_b:
                check_comparable(x, y)
        first = sides_a[0]
        dist = hierarchical_distributions([[s.items.scored() for s in sides_a], [s.items.scored() for s in sides_b]],
                                          metric_for(first.record, first.items), settings.resamples,
                                          task_rng(settings.seed, first.record.task), draws)
        d = dist[0] - dist[1]
        diffs.append(d)
        rows[task] = _row(a.seed_scores(task), b.seed_scores(task), d, settings.level, first.items.n)
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame["p holm"] = holm(frame[f"p {METHOD}"].tolist())
    # Avg.: each seed's average over the tasks, and the average of the tasks' differences on each replicate
    per_seed = [np.mean([s.seed_scores(t) for t in s.tasks], axis=0) for s in (a, b)]
    frame.loc["Avg."] = {**_row(*per_seed, np.mean(np.stack(diffs), axis=0), settings.level, int(frame["n"].sum())),
                         "p holm": float("nan")}
    frame["verdict"] = [verdict_of(d, p, alpha) for d, p in
                        zip(frame["diff"], [*frame["p holm"].iloc[:-1], frame[f"p {METHOD}"].iloc[-1]], strict=True)]
    frame.index.name = "task"
    notes = [
        f"A = {_describe(a)}, B = {_describe(b)}; diff = A - B of the means over seeds, std the sample standard deviation.",
        f"Verdict per task: the {METHOD} (each side's seeds resampled with replacement, then the items, shared by both "
        f"sides; Davison & Hinkley 1997 §3.8), {settings.resamples} resamples, seed {settings.seed}, "
        f"{100 * settings.level:g}% intervals, Holm-corrected over {len(rows)} task(s), at alpha {alpha:g}; "
        "Avg.: the same replicates averaged over tasks.",
        *(f"Warning: {m}." for m in few),
    ]
    return Comparison(a.name, b.name, frame, METHOD, alpha, settings, notes, warnings=few,
                      names={sides[0].record.task: task for task, sides in a.tasks.items()})


def _row(a: np.ndarray, b: np.ndarray, d: np.ndarray, level: float, n: int) -> dict:
    lo, hi = percentile_interval(d, level)
    return {"A": a.mean(), "A std": _std(a), "A seeds": a.size, "B": b.mean(), "B std": _std(b), "B seeds": b.size,
            "diff": a.mean() - b.mean(), "diff low": lo, "diff high": hi, f"p {METHOD}": paired_bootstrap_p(d), "n": n}


def _describe(side: SeedSide) -> str:
    return f"{side.name} ({counted(side.n_seeds, 'seed')})" if side.group else f"{side.name} (a single model)"
