"""Intervals and paired tests for stored records: the glue between result records and :mod:`embench.stats`.

A record's interval is a percentile bootstrap over its items (:class:`~embench.evaluation.items.Items`):
STS pairs resampled within each subset, transfer test examples resampled; the score is recomputed
under the record's own protocol (aggregation and correlation) on every resample. Each task draws from
its own stream, seeded by (seed, task name), so a task's interval does not depend on which other tasks
ran beside it, and the replicates of independent tasks can be averaged into an interval of ``Avg.``.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from ..core.arguments import is_seed
from ..core.defaults import SEED_MAX
from ..core.errors import EmbenchError
from ..stats import Metric, bootstrap_distributions, percentile_interval, point_estimate
from .items import Items
from .results import Record

DEFAULT_LEVEL = 0.95
DEFAULT_RESAMPLES = 1000
# The Monte Carlo error of a 95 % interval's end is about 2.7 / sqrt(resamples) of the score's bootstrap standard
# error (the 2.5 % quantile of a normal): 0.085 of it at the default, 0.003 at a million. Past that, only cost is
# left: each resample of each system holds 8 bytes and the percentiles sort them all, in C, where Ctrl-C and
# SIGTERM cannot stop it (1e9 resamples ran over ten minutes and ignored both).
MAX_RESAMPLES = 1_000_000
LEVEL_RULE = "a confidence level: a fraction between 0 and 1 (0.95) or a percentage from 1 to below 100 (95)"
METHOD = "percentile bootstrap over items (STS: pairs, within each subset; transfer: test examples)"


@dataclass(frozen=True)
class IntervalSettings:
    """How intervals are drawn: confidence level (a fraction), number of resamples, seed."""

    level: float = DEFAULT_LEVEL
    resamples: int = DEFAULT_RESAMPLES
    seed: int = 1111

    @classmethod
    def parse(cls, level: float | str | None, resamples: int | str | None = None, seed: int | str | None = None,
              option: str = "--ci") -> IntervalSettings:
        """From user input: ``level`` as a fraction below 1 (0.95) or else a percentage below 100 (95, and 1 is
        1 %: read as the fraction 1.0, it was refused); named options in every error."""
        try:
            lv = float(DEFAULT_LEVEL if level is None else level)
        except (TypeError, ValueError):
            raise EmbenchError(f"{option} {level!r}: {LEVEL_RULE}") from None
        if isinstance(level, bool) or not math.isfinite(lv) or not 0 < lv < 100:
            raise EmbenchError(f"{option} {level!r}: {LEVEL_RULE}")
        lv = lv if lv < 1 else lv / 100
        n = DEFAULT_RESAMPLES if resamples is None else resamples
        if isinstance(n, str) and n.strip().isdigit():
            n = int(n)
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise EmbenchError(f"--resamples {resamples!r}: the number of bootstrap resamples must be a positive integer")
        least = math.ceil(2 / (1 - lv) - 1e-9)  # a percentile interval's each tail then holds a resample beyond its end
        if n < least:
            raise EmbenchError(f"--resamples {n}: a {100 * lv:g}% interval needs at least {least} resamples, so that "
                               f"each tail holds one beyond the interval's end (the default: {DEFAULT_RESAMPLES:,})")
        if n > MAX_RESAMPLES:
            raise EmbenchError(f"--resamples {n}: at most {MAX_RESAMPLES:,}; an interval's ends are then exact to 0.3 % of "
                               f"the score's standard error (the default {DEFAULT_RESAMPLES:,}: to 8.5 %)")
        try:
            s = 1111 if seed is None else int(seed)
        except (TypeError, ValueError):
            raise EmbenchError(f"--ci-seed {seed!r}: an integer") from None
        if not is_seed(s) or isinstance(seed, bool | float):  # a text of digits is read as its number; 1.5 is no seed
            raise EmbenchError(f"--ci-seed {seed!r}: a whole number from 0 to {SEED_MAX}")
        return cls(lv, int(n), s)

    def describe(self) -> str:
        return f"{100 * self.level:g}% intervals: {METHOD}, {self.resamples} resamples, seed {self.seed}"


def metric_for(record: Record, items: Items) -> Metric:
    """The metric the record's main score is, as the stats layer computes it."""
    if items.kind == "accuracy":
        return Metric(kind="accuracy")
    aggregation = record.protocol.get("aggregation", "all") if len(items.groups) > 1 else "all"
    return Metric(correlation=record.protocol.get("correlation", "spearman"), aggregation=aggregation)


def task_rng(seed: int, task: str) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(task.encode())]))


def distributions(records: Sequence[Record], items: Sequence[Items], settings: IntervalSettings) -> np.ndarray:
    """(len(records), resamples) bootstrap scores of one task's records, all on the same resamples."""
    metric = metric_for(records[0], items[0])
    return bootstrap_distributions([it.scored() for it in items], metric, settings.resamples,
                                   task_rng(settings.seed, records[0].task))


def interval_entry(record: Record, items: Items, dist: np.ndarray, settings: IntervalSettings) -> dict:
    """What a record keeps of its interval (the settings are part of it)."""
    lo, hi = percentile_interval(dist, settings.level)
    return {
        **asdict(settings), "method": METHOD, "low": lo, "high": hi, "n": items.n,
        "metric": metric_for(record, items).describe(), "point_from_items": point_estimate(items.scored(), metric_for(record, items)),
    }


def average_interval(dists: Sequence[np.ndarray], level: float) -> tuple[float, float]:
    """Interval of the average of independent tasks: replicate b of Avg. is the mean of every task's replicate b."""
    return percentile_interval(np.mean(np.stack(dists), axis=0), level)
