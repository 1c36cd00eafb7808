"""The two-level bootstrap: a recipe trained under several seeds, scored on a test set, resampled at both levels.

A seed group's score (the mean over its seeds) varies with the seeds that happened to be trained and with
the test items that happened to be drawn. One replicate resamples both: the seeds with replacement, and the
items as :mod:`embench.stats.bootstrap` does (within every group, the same counts for every system, so a
comparison stays paired). Every drawn seed is scored on the replicate's items under the task's metric, and
the side's score is the mean over the drawn seeds. A single model is a side of one seed: its seed draw is
always that seed, and the replicate is the ordinary paired item bootstrap's.

This is the hierarchical (two-stage) bootstrap of Davison & Hinkley, *Bootstrap Methods and their
Application* (1997), §3.8, adapted to a crossed design: every seed is scored on the same items, so the item
draw is shared by the seeds (and by the two sides) instead of drawn anew inside each seed. Resampling both
factors of a crossed design errs on the conservative side (Owen, "The pigeonhole bootstrap", Ann. Appl.
Stat. 2007). With k seeds, the seed level's variance is that of k draws from the k seeds at hand, (k - 1) / k
of their sample variance: two seeds give three distinct seed draws and a poor estimate of it.

The item draws come from the caller's generator exactly as :func:`bootstrap_distributions` makes them; the
seed draws come from separate arrays, so that the same seed draw can serve every task of one comparison.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .bootstrap import Metric, Scored, bootstrap_distributions


def draw_seeds(n_seeds: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(resamples, n_seeds) indices of the seeds drawn, with replacement, in each replicate."""
    if n_seeds < 1:
        raise ValueError("a side needs at least one seed")
    return rng.integers(0, n_seeds, size=(resamples, n_seeds), dtype=np.int64)


def seed_means(per_seed: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """(resamples,) means over each replicate's drawn seeds; ``per_seed`` is (seeds, resamples): every
    seed's score on replicate r's items."""
    return per_seed[draws, np.arange(per_seed.shape[1])[:, None]].mean(axis=1)


def hierarchical_distributions(sides: Sequence[Sequence[Scored]], metric: Metric, resamples: int,
                               item_rng: np.random.Generator, seed_draws: Sequence[np.ndarray]) -> np.ndarray:
    """(len(sides), resamples) two-level bootstrap scores: side s is a list of its seeds' outcomes on the shared
    items, ``seed_draws[s]`` its (resamples, seeds) draw from :func:`draw_seeds`."""
    sizes = [len(side) for side in sides]
    for size, draws in zip(sizes, seed_draws, strict=True):
        if draws.shape != (resamples, size):
            raise ValueError(f"seed draws of shape {draws.shape}, expected ({resamples}, {size})")
    every_seed = bootstrap_distributions([s for side in sides for s in side], metric, resamples, item_rng)
    bounds = np.cumsum([0, *sizes])
    return np.stack([seed_means(every_seed[lo:hi], draws)
                     for lo, hi, draws in zip(bounds[:-1], bounds[1:], seed_draws, strict=True)])
