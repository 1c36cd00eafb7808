"""Pearson's r with per-item weights, row by row: the correlation of a resample given as multiplicities."""

from __future__ import annotations

import numpy as np


def _weighted_mean(x: np.ndarray, w: np.ndarray, total: np.ndarray) -> np.ndarray:
    return (w @ x if x.ndim == 1 else np.einsum("ij,ij->i", w, x)) / total


def weighted_pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Row-wise Pearson r of ``x`` and ``y`` ((B, n) or (n,), broadcast) with weights ``w`` (B, n).

    With integer weights this is exactly the Pearson r of the sample in which item i appears w_i
    times. A row whose x or y is constant gives NaN (as ``scipy.stats.pearsonr`` warns and does).
    Products are summed by ``einsum`` without (B, n) temporaries: this is the bootstrap's inner loop.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    shape = np.broadcast_shapes(x.shape, y.shape)
    w = np.ones(shape) if w is None else np.asarray(w, dtype=np.float64)
    rows = len(shape) > 1 or w.ndim > 1  # (B,) results, else one number
    if w.ndim == 1:
        w = w[None]
    total = w.sum(axis=-1)
    dx = x - _weighted_mean(x, w, total)[:, None]
    dy = y - _weighted_mean(y, w, total)[:, None]
    wdx = w * dx
    sxy = np.einsum("ij,ij->i", wdx, dy)
    sxx = np.einsum("ij,ij->i", wdx, dx)
    syy = np.einsum("ij,ij->i", w * dy, dy)
    # a resample that drew one value only (item 0 three times) is constant, but its weighted mean is not that value
    # to the last bit: deviations of 1e-17 then gave r = +-1 or noise where scipy.stats.pearsonr gives NaN. A spread
    # under 1e-12 of the values' size is that rounding, never data (scoring's own rule, sts/scoring.py, is 1e-6)
    flat_x = sxx <= total * (1e-12 * np.abs(x).max(initial=0.0)) ** 2  # initial: no items is NaN, as before
    flat_y = syy <= total * (1e-12 * np.abs(y).max(initial=0.0)) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(flat_x | flat_y, np.nan, sxy / np.sqrt(sxx * syy))
    # rounding can push |r| a hair past 1 on perfectly (anti)correlated rows
    r = np.where(np.isfinite(r), np.clip(r, -1.0, 1.0), np.nan)
    return r if rows else r[0]
