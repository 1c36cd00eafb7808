"""Steiger's (1980) test for two dependent correlations that share one variable (here: the gold scores).

Models A and B are scored against the same gold g: r_A = r(g, A), r_B = r(g, B), and the two
correlations are dependent through r_AB = r(A, B). Steiger, "Tests for comparing elements of a
correlation matrix", Psychological Bulletin 87(2), 1980, Eq. 14 (pooled r, Fisher z):

    Z = (z_A - z_B) * sqrt(n - 3) / sqrt(2 - 2 * s),   z = atanh(r)
    s = psi / (1 - rbar^2)^2,   rbar = (r_A + r_B) / 2
    psi = r_AB * (1 - 2 rbar^2) - rbar^2 * (1 - 2 rbar^2 - r_AB^2) / 2

Z is standard normal under r_A = r_B; the p-value is two-sided. It is defined for Pearson's r.
"""

from __future__ import annotations

import math

from scipy.stats import norm


def steiger_test(r_a: float, r_b: float, r_ab: float, n: int) -> tuple[float, float]:
    """(Z, two-sided p) for H0: r(g, A) = r(g, B), given r(A, B) and the number of items ``n``."""
    if n <= 3:
        raise ValueError(f"Steiger's test needs more than 3 items, got {n}")
    for name, r in (("r_A", r_a), ("r_B", r_b), ("r_AB", r_ab)):
        if not -1 <= r <= 1:
            raise ValueError(f"Steiger's test: {name}={r} is no correlation (outside [-1, 1])")
    if r_a != r_b and max(abs(r_a), abs(r_b)) == 1:  # Fisher's z of a perfect correlation is infinite
        raise ValueError(f"Steiger's test is undefined for a perfect correlation (r_A={r_a}, r_B={r_b})")
    rbar = (r_a + r_b) / 2
    psi = r_ab * (1 - 2 * rbar**2) - 0.5 * rbar**2 * (1 - 2 * rbar**2 - r_ab**2)
    s = psi / (1 - rbar**2) ** 2
    if r_a == r_b:  # identical correlations (the same system twice gives r_AB = 1 and a 0/0)
        return 0.0, 1.0
    if 2 - 2 * s <= 0:
        raise ValueError(f"Steiger's test is undefined for r_A={r_a}, r_B={r_b}, r_AB={r_ab}")
    z = (math.atanh(r_a) - math.atanh(r_b)) * math.sqrt(n - 3) / math.sqrt(2 - 2 * s)
    return z, float(2 * norm.sf(abs(z)))
