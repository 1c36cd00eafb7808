"""The paired permutation test (approximate randomisation): could the two systems' outputs be swapped?

Under the null hypothesis the two systems are exchangeable item by item, so swapping A's and B's
outputs on any set of items leaves the distribution of score(A) - score(B) unchanged. The p-value is
the share of swaps whose difference is at least as extreme as the observed one, with
``scipy.stats.permutation_test``'s conventions (``permutation_type="samples"``): every swap pattern
when there are at most ``resamples`` of them (exact), else ``resamples`` random ones plus the
observed, and a relative tolerance of 100 machine epsilons when comparing.

Two models' similarity scores live on different scales (a random BERT's cosines sit near 0.97), so
each system's outputs are first put on a common one that its score cannot tell apart: z-scores for
Pearson (r is unchanged by an affine map of all of a system's scores), ranks over all items for
Spearman (unchanged by a monotone map). Accuracies are swapped as 0/1 correctness.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

from .bootstrap import Metric, Scored
from .weighted import weighted_pearson

MAX_CELLS = 4_000_000


def exchangeable(scored: Scored, metric: Metric) -> np.ndarray:
    """All of a system's outputs (groups concatenated) on the scale the test swaps."""
    x = np.concatenate(scored.values)
    if metric.kind == "accuracy":
        return x
    if metric.correlation == "spearman":
        return rankdata(x)
    return (x - x.mean()) / (x.std() or 1.0)


def score_rows(rows: np.ndarray, gold: list[np.ndarray] | None, sizes: list[int], metric: Metric) -> np.ndarray:
    """The metric of each row of ``rows`` ((B, N): a system's outputs, groups concatenated)."""
    if metric.kind == "accuracy":
        return rows.mean(axis=1)
    spearman = metric.correlation == "spearman"

    def corr(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return weighted_pearson(rankdata(x, axis=1), rankdata(y)) if spearman else weighted_pearson(x, y)

    if metric.aggregation == "all":
        return corr(rows, np.concatenate(gold))
    bounds = np.cumsum([0, *sizes])
    per_group = np.stack([corr(rows[:, s:e], g) for s, e, g in zip(bounds[:-1], bounds[1:], gold, strict=True)])
    if metric.aggregation == "mean":
        return per_group.mean(axis=0)
    return np.average(per_group, axis=0, weights=np.asarray(sizes, dtype=np.float64))


def paired_permutation_test(a: Scored, b: Scored, metric: Metric, resamples: int = 1000,
                            rng: np.random.Generator | int | None = None) -> tuple[float, float]:
    """(observed score(A) - score(B), two-sided p-value) of the paired permutation test."""
    if a.sizes != b.sizes:
        raise ValueError(f"paired systems must share their items: group sizes {a.sizes} vs {b.sizes}")
    if (a.gold is None) != (b.gold is None) or (a.gold is not None and not all(
            np.array_equal(ga, gb) for ga, gb in zip(a.gold, b.gold, strict=True))):
        raise ValueError("paired systems must share their items: their gold scores (or labels) differ")
    if isinstance(resamples, bool) or not isinstance(resamples, int | np.integer) or resamples < 1:
        raise ValueError(f"resamples must be a positive integer, not {resamples!r}")
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    x, y, sizes, gold = exchangeable(a, metric), exchangeable(b, metric), a.sizes, a.gold
    n = x.size

    def diffs(swap: np.ndarray) -> np.ndarray:
        return score_rows(np.where(swap, y, x), gold, sizes, metric) - score_rows(np.where(swap, x, y), gold, sizes, metric)

    observed = float(diffs(np.zeros((1, n), dtype=bool))[0])
    exact = n < 63 and 2**n <= resamples
    null = []
    if exact:
        patterns = np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64) & 1
        for s in range(0, len(patterns), max(1, MAX_CELLS // n)):
            null.append(diffs(patterns[s : s + max(1, MAX_CELLS // n)].astype(bool)))
    else:
        batch = max(1, min(resamples, MAX_CELLS // n))
        for s in range(0, resamples, batch):
            null.append(diffs(rng.random((min(batch, resamples - s), n)) < 0.5))
    null_d = np.concatenate(null)
    adjustment = 0 if exact else 1
    gamma = abs(observed) * np.finfo(np.float64).eps * 100
    less = (np.count_nonzero(null_d <= observed + gamma) + adjustment) / (null_d.size + adjustment)
    greater = (np.count_nonzero(null_d >= observed - gamma) + adjustment) / (null_d.size + adjustment)
    return observed, float(min(1.0, 2 * min(less, greater)))
