"""Statistics for every score embench prints: bootstrap intervals, paired tests, multiple testing, seeds.

Pure numpy/scipy, over arrays of per-item outcomes (:class:`Scored`); nothing here knows a record, a
task or a model. The glue that reads stored records is :mod:`embench.evaluation.significance`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy import lazy_exports

_EXPORTS = {
    **{n: ".bootstrap" for n in ("Metric", "Scored", "bootstrap_distributions", "paired_bootstrap_p",
                                 "percentile_interval", "point_estimate")},
    **{n: ".hierarchical" for n in ("draw_seeds", "hierarchical_distributions")},
    "steiger_test": ".dependent_correlations", "holm": ".multiple_testing",
    "paired_permutation_test": ".permutation", "seed_summary": ".seeds", "seed_t_test": ".seeds",
}
# scipy.stats (Steiger's test, seed t-tests) is imported on first use: naming a task imports none of it
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "Metric", "Scored", "bootstrap_distributions", "draw_seeds", "hierarchical_distributions", "holm",
    "paired_bootstrap_p", "paired_permutation_test",
    "percentile_interval", "point_estimate", "seed_summary", "seed_t_test", "steiger_test",
]

if TYPE_CHECKING:
    from .bootstrap import (
        Metric,
        Scored,
        bootstrap_distributions,
        paired_bootstrap_p,
        percentile_interval,
        point_estimate,
    )
    from .dependent_correlations import steiger_test
    from .hierarchical import draw_seeds, hierarchical_distributions
    from .multiple_testing import holm
    from .permutation import paired_permutation_test
    from .seeds import seed_summary, seed_t_test
