"""Holm's (1979) step-down correction for testing several tasks at once (controls the family-wise error)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input order: the i-th smallest of m is multiplied by (m - i + 1),
    then made non-decreasing in that order and capped at 1. NaN p-values are passed through and not counted."""
    if isinstance(pvalues, str | bytes):
        raise ValueError(f"holm() takes a list of p-values, not the text {pvalues!r}")
    p = np.asarray(pvalues, dtype=np.float64).reshape(-1)
    if ((p < 0) | (p > 1)).any():  # NaN compares false: passed through, as said
        raise ValueError(f"holm(): p-values lie in [0, 1]; got {p[(p < 0) | (p > 1)].tolist()}")
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    order = ok[np.argsort(p[ok], kind="stable")]
    running = 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[j]))
        out[j] = running
    return out.tolist()
