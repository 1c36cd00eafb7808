"""The bootstrap over items: percentile intervals of any embench score, and paired differences.

A task's score is a function of its items (STS: sentence pairs, grouped by subset; transfer: test
examples). One bootstrap replicate draws, within every group, as many items as the group holds, with
replacement, and recomputes the score exactly as the task does (``all``: one correlation over the
concatenated groups; ``mean`` / ``wmean``: per group, then averaged), so subset sizes stay fixed.
Resamples are multiplicity counts, not copied arrays: correlations are weighted by the counts
(:mod:`embench.stats.weighted`) and Spearman's ranks come from one sort (:mod:`embench.stats.ranks`).

Several systems scored on the same items share every replicate (a paired bootstrap): the difference
of two models is measured on the same resampled pairs. With one group, the draws are those of
``scipy.stats.bootstrap(..., paired=True, method="percentile")`` given the same generator and batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .ranks import Ranker
from .weighted import weighted_pearson

KINDS = ("correlation", "accuracy")
CORRELATIONS = ("pearson", "spearman")
AGGREGATIONS = ("all", "mean", "wmean")
MAX_CELLS = 2_000_000  # resamples x items held at once: ~16 MB per float64 temporary, per thread


@dataclass(frozen=True)
class Metric:
    """How a score is computed from its items: a correlation aggregated over groups, or an accuracy."""

    kind: str = "correlation"
    correlation: str = "spearman"
    aggregation: str = "all"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"metric kind {self.kind!r}: one of {KINDS}")
        if self.kind == "correlation" and (self.correlation not in CORRELATIONS or self.aggregation not in AGGREGATIONS):
            raise ValueError(f"correlation {self.correlation!r} / aggregation {self.aggregation!r}: one of {CORRELATIONS} / {AGGREGATIONS}")

    def describe(self) -> str:
        return "accuracy" if self.kind == "accuracy" else f"{self.correlation} ({self.aggregation})"


@dataclass
class Scored:
    """One system's outcomes on a task's items, group by group (STS subsets; a single group for most tasks).

    ``values`` are similarity scores (with ``gold``) for a correlation, or 0/1 correctness for an accuracy.
    """

    values: list[np.ndarray]
    gold: list[np.ndarray] | None = None

    def __post_init__(self) -> None:
        self.values = [np.asarray(v, dtype=np.float64) for v in self.values]
        if self.gold is not None:
            self.gold = [np.asarray(g, dtype=np.float64) for g in self.gold]
            if [len(g) for g in self.gold] != self.sizes:
                raise ValueError(f"gold sizes {[len(g) for g in self.gold]} differ from value sizes {self.sizes}")

    @property
    def sizes(self) -> list[int]:
        return [len(v) for v in self.values]


class _Plan:
    """One system's score as a function of per-group multiplicities: rankers built once, used per batch."""

    def __init__(self, scored: Scored, metric: Metric):
        self.metric = metric
        self.sizes = scored.sizes
        self.values = scored.values
        if metric.kind == "correlation":
            if scored.gold is None:
                raise ValueError("a correlation metric needs gold scores")
            self.gold = scored.gold
            self.x_all, self.y_all = np.concatenate(self.values), np.concatenate(self.gold)
            if metric.correlation == "spearman":
                if metric.aggregation == "all":
                    self.rank_x, self.rank_y = Ranker(self.x_all), Ranker(self.y_all)
                else:
                    self.group_ranks = [(Ranker(v), Ranker(g)) for v, g in zip(self.values, self.gold, strict=True)]
        else:
            self.x_all = np.concatenate(self.values)

    def _corr(self, x: np.ndarray, y: np.ndarray, rankers: tuple[Ranker, Ranker] | None, counts: np.ndarray) -> np.ndarray:
        if rankers is None:
            return weighted_pearson(x, y, counts)
        return weighted_pearson(rankers[0].midranks(counts), rankers[1].midranks(counts), counts)

    def __call__(self, counts: list[np.ndarray]) -> np.ndarray:
        """(B,) scores of B resamples; ``counts[g]`` is a (B, n_g) multiplicity matrix of group g."""
        m = self.metric
        joined = counts[0] if len(counts) == 1 else np.concatenate(counts, axis=1)
        if m.kind == "accuracy":
            return joined @ self.x_all / joined.sum(axis=1)
        if m.aggregation == "all":
            rankers = (self.rank_x, self.rank_y) if m.correlation == "spearman" else None
            return self._corr(self.x_all, self.y_all, rankers, joined)
        per_group = np.stack([
            self._corr(v, g, self.group_ranks[i] if m.correlation == "spearman" else None, c)
            for i, (v, g, c) in enumerate(zip(self.values, self.gold, counts, strict=True))
        ])
        if m.aggregation == "mean":
            return per_group.mean(axis=0)
        return np.average(per_group, axis=0, weights=np.asarray(self.sizes, dtype=np.float64))


def point_estimate(scored: Scored, metric: Metric) -> float:
    """The score on the items as they are (every multiplicity 1): what the task itself reports."""
    return float(_Plan(scored, metric)([np.ones((1, n)) for n in scored.sizes])[0])


def draw_counts(rng: np.random.Generator, sizes: Sequence[int], batch: int) -> list[np.ndarray]:
    """Per group, a (batch, n_g) matrix of how often each item is drawn in each resample."""
    out = []
    for n in sizes:
        idx = rng.integers(0, n, size=(batch, n), dtype=np.int64)  # the draw scipy.stats.bootstrap makes
        flat = (idx + np.arange(batch, dtype=np.int64)[:, None] * n).ravel()
        out.append(np.bincount(flat, minlength=batch * n).reshape(batch, n))
    return out


def bootstrap_distributions(systems: Sequence[Scored], metric: Metric, resamples: int,
                            rng: np.random.Generator | int | None = None, batch: int | None = None) -> np.ndarray:
    """(len(systems), resamples) bootstrap scores; every system is scored on the same resamples (paired)."""
    if not isinstance(resamples, (int, np.integer)) or resamples < 1:
        raise ValueError(f"resamples must be a positive integer, not {resamples!r}")
    sizes = systems[0].sizes
    for s in systems[1:]:
        if s.sizes != sizes:
            raise ValueError(f"paired systems must share their items: group sizes {s.sizes} vs {sizes}")
    if min(sizes, default=0) < 1:
        raise ValueError(f"every group needs at least one item, got sizes {sizes}")
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    plans = [_Plan(s, metric) for s in systems]
    batch = batch or max(1, min(resamples, MAX_CELLS // sum(sizes)))
    out = np.empty((len(systems), resamples))
    for start in range(0, resamples, batch):
        b = min(batch, resamples - start)
        counts = draw_counts(rng, sizes, b)
        for i, plan in enumerate(plans):
            out[i, start : start + b] = plan(counts)
    return out


def percentile_interval(distribution: np.ndarray, level: float) -> tuple[float, float]:
    """Efron's percentile interval: the (1 - level) / 2 and (1 + level) / 2 quantiles (linear interpolation,
    as ``scipy.stats.bootstrap`` computes them). Replicates that are NaN (a constant resample) are left out."""
    if not 0 < level < 1:
        raise ValueError(f"confidence level must be in (0, 1), not {level!r}")
    finite = distribution[np.isfinite(distribution)]
    if finite.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.quantile(finite, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def paired_bootstrap_p(differences: np.ndarray) -> float:
    """Two-sided p-value of "no difference" from bootstrap differences A - B on shared resamples.

    The percentile test: twice the smaller share of replicates on either side of 0, each counted with the
    observed sample as one more replicate ((k + 1) / (B + 1), never 0). Up to that one replicate, a p
    below 1 - level goes with a percentile interval of the difference that excludes 0.
    """
    d = differences[np.isfinite(differences)]
    below = (np.count_nonzero(d <= 0) + 1) / (d.size + 1)
    above = (np.count_nonzero(d >= 0) + 1) / (d.size + 1)
    return float(min(1.0, 2 * min(below, above)))
