"""Pearson's r with per-item weights, row by row: the correlation of a resample given as multiplicities."""

from __future__ import annotations

import numpy as np


def weighted_pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Row-wise Pearson r of ``x`` and ``y`` ((B, n) or (n,), broadcast) with weights ``w`` (B, n).

    With integer weights this is exactly the Pearson r of the sample in which item i appears w_i
    times. A row whose x or y is constant gives NaN (as ``scipy.stats.pearsonr`` warns and does).
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if w is None:
        w = np.ones(np.broadcast_shapes(x.shape, y.shape))
    w = np.asarray(w, dtype=np.float64)
    total = w.sum(axis=-1, keepdims=True)
    dx = x - (w * x).sum(axis=-1, keepdims=True) / total
    dy = y - (w * y).sum(axis=-1, keepdims=True) / total
    sxy = (w * dx * dy).sum(axis=-1)
    sxx = (w * dx * dx).sum(axis=-1)
    syy = (w * dy * dy).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = sxy / np.sqrt(sxx * syy)
    # rounding can push |r| a hair past 1 on perfectly (anti)correlated rows
    return np.where(np.isfinite(r), np.clip(r, -1.0, 1.0), np.nan)
