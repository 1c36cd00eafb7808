"""Seed variance: mean and spread of one recipe's scores over training seeds, and t-tests against a baseline.

JTCSE (Table XIV) and BeLLM report their method's mean over seeds with a t-test; here any recipe gets
the same: Welch's t-test between two groups of seeds (unequal variances), or a one-sample t-test of the
seeds against a single baseline score.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

from ..core.errors import EmbenchError


def seed_summary(scores: Sequence[float]) -> dict[str, float]:
    """Mean, sample standard deviation (n - 1) and count of scores over seeds."""
    x = np.asarray(scores, dtype=np.float64)
    return {"mean": float(x.mean()), "std": float(x.std(ddof=1)) if x.size > 1 else float("nan"), "n": int(x.size)}


def seed_t_test(scores: Sequence[float], baseline: Sequence[float] | float, what: str = "scores") -> dict[str, float | str]:
    """Two-sided t-test of seeds against a baseline: Welch's when the baseline has seeds too, else one-sample."""
    a = np.asarray(scores, dtype=np.float64)
    if a.size < 2:
        raise EmbenchError(f"a t-test over seeds needs at least two seeds of {what}; got {a.size}")
    if np.ndim(baseline) == 0:
        res = stats.ttest_1samp(a, float(baseline))
        return {"test": "one-sample t-test against the baseline's score", "t": float(res.statistic), "p": float(res.pvalue), "df": a.size - 1}
    b = np.asarray(baseline, dtype=np.float64)
    if b.size == 0:
        raise EmbenchError(f"a t-test over seeds needs the baseline's score (or its seeds' scores); got none for {what}")
    if b.size < 2:
        return seed_t_test(a, float(b[0]), what)
    res = stats.ttest_ind(a, b, equal_var=False)
    return {"test": "Welch's t-test (unequal variances)", "t": float(res.statistic), "p": float(res.pvalue), "df": float(res.df)}
