"""Mid-ranks of a fixed vector inside any bootstrap resample of it, without sorting each resample.

A bootstrap resample of ``v`` is ``v`` with multiplicities ``c`` (how often each item was drawn). The
rank of an item in the resample depends only on how many drawn items are smaller and how many tie
with it, so one sort of ``v`` serves every resample: per group of equal values, the mid-rank is
(drawn items below the group) + (drawn items in the group + 1) / 2, as ``scipy.stats.rankdata``'s
``average`` method gives on the materialised resample. That turns Spearman's rho on B resamples from
B sorts into a few passes over a (B, n) count matrix.
"""

from __future__ import annotations

import numpy as np


class Ranker:
    """The tie structure of one vector: its sort order and which group of equal values each item is in."""

    def __init__(self, values: np.ndarray):
        values = np.asarray(values, dtype=np.float64)
        self.order = np.argsort(values, kind="stable")
        ordered = values[self.order]
        self.starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        group_of_sorted = np.cumsum(np.r_[False, ordered[1:] != ordered[:-1]])
        self.group = np.empty(len(values), dtype=np.int64)
        self.group[self.order] = group_of_sorted

    def midranks(self, counts: np.ndarray) -> np.ndarray:
        """(B, n) mid-ranks of every item within each resample whose multiplicities are ``counts`` (B, n)."""
        per_group = np.add.reduceat(counts[:, self.order], self.starts, axis=1).astype(np.float64)
        below = np.cumsum(per_group, axis=1) - per_group
        return (below + (per_group + 1) / 2)[:, self.group]
