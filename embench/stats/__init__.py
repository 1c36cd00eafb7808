"""Statistics for every score embench prints: bootstrap intervals, paired tests, multiple testing, seeds.

Pure numpy/scipy, over arrays of per-item outcomes (:class:`Scored`); nothing here knows a record, a
task or a model. The glue that reads stored records is :mod:`embench.evaluation.significance`.
"""

from .bootstrap import (
    Metric,
    Scored,
    bootstrap_distributions,
    paired_bootstrap_p,
    percentile_interval,
    point_estimate,
)
from .dependent_correlations import steiger_test
from .multiple_testing import holm
from .permutation import paired_permutation_test
from .seeds import seed_summary, seed_t_test

__all__ = [
    "Metric", "Scored", "bootstrap_distributions", "holm", "paired_bootstrap_p", "paired_permutation_test",
    "percentile_interval", "point_estimate", "seed_summary", "seed_t_test", "steiger_test",
]
