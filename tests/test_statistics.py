"""The statistics layer against scipy, hand computations of the published formulas, and a coverage study."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from embench.core.errors import EmbenchError
from embench.stats import (
    Metric,
    Scored,
    bootstrap_distributions,
    draw_seeds,
    hierarchical_distributions,
    holm,
    paired_bootstrap_p,
    paired_permutation_test,
    percentile_interval,
    point_estimate,
    seed_t_test,
    steiger_test,
)
from embench.stats.ranks import Ranker


def _pairs(n: int, rho: float, seed: int, ties: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    y = rho * x + math.sqrt(1 - rho**2) * rng.standard_normal(n)
    if ties:  # gold scores on a 0-5 grid of halves, as STS annotations are
        y = np.clip(np.round(2 * (y + 2.5)) / 2, 0, 5)
    return x, y


def test_midranks_of_a_resample_equal_rankdata_of_the_materialised_resample():
    rng = np.random.default_rng(0)
    v = rng.integers(0, 6, 40).astype(float)  # many ties
    counts = np.bincount(rng.integers(0, 40, 40), minlength=40)
    ranks = Ranker(v).midranks(counts[None])[0]
    materialised = np.repeat(v, counts)
    expected = sps.rankdata(materialised)
    assert np.allclose(np.repeat(ranks, counts), expected, atol=1e-12)


@pytest.mark.parametrize("correlation", ["pearson", "spearman"])
def test_bootstrap_interval_equals_scipy_on_the_same_resamples(correlation):
    x, y = _pairs(150, 0.6, 1, ties=True)
    corr = (lambda a, b: sps.pearsonr(a, b)[0]) if correlation == "pearson" else (lambda a, b: sps.spearmanr(a, b)[0])
    ref = sps.bootstrap((x, y), corr, paired=True, vectorized=False, n_resamples=400, batch=100,
                        method="percentile", confidence_level=0.9, rng=np.random.default_rng(7))
    dist = bootstrap_distributions([Scored([x], [y])], Metric(correlation=correlation), 400,
                                   np.random.default_rng(7), batch=100)[0]
    assert np.allclose(dist, ref.bootstrap_distribution, atol=1e-9, rtol=0)
    lo, hi = percentile_interval(dist, 0.9)
    assert abs(lo - ref.confidence_interval.low) < 1e-9 and abs(hi - ref.confidence_interval.high) < 1e-9


def test_stratified_aggregations_recompute_the_task_score_on_each_resample():
    """``all`` pools the resampled groups; ``mean``/``wmean`` average per-group scores of the same resample."""
    groups = [_pairs(n, 0.5, s, ties=True) for n, s in ((30, 1), (50, 2), (20, 3))]
    scored = Scored([g[0] for g in groups], [g[1] for g in groups])
    rng = np.random.default_rng(3)
    for agg in ("all", "mean", "wmean"):
        dist = bootstrap_distributions([scored], Metric(aggregation=agg), 5, np.random.default_rng(3), batch=5)[0]
        rng = np.random.default_rng(3)
        idx = [rng.integers(0, len(g[0]), size=(5, len(g[0]))) for g in groups]
        for b in range(5):
            rs = [sps.spearmanr(g[0][i[b]], g[1][i[b]])[0] for g, i in zip(groups, idx, strict=True)]
            if agg == "all":
                want = sps.spearmanr(np.concatenate([g[0][i[b]] for g, i in zip(groups, idx, strict=True)]),
                                     np.concatenate([g[1][i[b]] for g, i in zip(groups, idx, strict=True)]))[0]
            elif agg == "mean":
                want = np.mean(rs)
            else:
                want = np.average(rs, weights=[30, 50, 20])
            assert dist[b] == pytest.approx(want, abs=1e-12)
    assert point_estimate(scored, Metric(aggregation="all")) == pytest.approx(
        sps.spearmanr(np.concatenate(scored.values), np.concatenate(scored.gold))[0], abs=1e-12)


def test_accuracy_bootstrap_is_the_mean_of_resampled_correctness():
    correct = (np.random.default_rng(0).random(200) < 0.8).astype(float)
    ref = sps.bootstrap((correct,), np.mean, n_resamples=300, batch=300, method="percentile", rng=np.random.default_rng(1))
    dist = bootstrap_distributions([Scored([correct])], Metric(kind="accuracy"), 300, np.random.default_rng(1))[0]
    assert np.allclose(dist, ref.bootstrap_distribution, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("correlation", ["pearson", "spearman"])
def test_the_95_interval_covers_the_true_correlation_in_93_to_97_percent_of_simulations(correlation):
    rho, n, sims = 0.6, 300, 1000
    truth = rho if correlation == "pearson" else 6 / math.pi * math.asin(rho / 2)  # bivariate normal
    rng = np.random.default_rng(2024)
    covered = 0
    for s in range(sims):
        x, y = _pairs(n, rho, 10_000 + s)
        lo, hi = percentile_interval(bootstrap_distributions([Scored([x], [y])], Metric(correlation=correlation), 500, rng)[0], 0.95)
        covered += lo <= truth <= hi
    assert 0.93 <= covered / sims <= 0.97, covered / sims


def test_paired_bootstrap_scores_both_systems_on_the_same_resamples():
    x, y = _pairs(120, 0.6, 4)
    z = x + np.random.default_rng(5).standard_normal(120)  # a noisier system
    d = bootstrap_distributions([Scored([x], [y]), Scored([z], [y])], Metric(correlation="pearson"), 300, 9)
    rng = np.random.default_rng(9)
    idx = rng.integers(0, 120, size=(300, 120))
    want = [sps.pearsonr(x[i], y[i])[0] - sps.pearsonr(z[i], y[i])[0] for i in idx[:5]]
    assert np.allclose(d[0, :5] - d[1, :5], want, atol=1e-12)
    assert paired_bootstrap_p(d[0] - d[1]) < 0.05
    assert paired_bootstrap_p(d[0] - d[0]) == 1.0  # a system against itself: no difference


def test_hierarchical_bootstrap_with_seeds_that_agree_is_the_paired_item_bootstrap():
    x, y = _pairs(120, 0.6, 4)
    z = x + np.random.default_rng(5).standard_normal(120)
    a, b, metric = Scored([x], [y]), Scored([z], [y]), Metric()
    paired = bootstrap_distributions([a, b], metric, 300, np.random.default_rng(9))
    seed_rng = np.random.default_rng(1)
    draws = [draw_seeds(3, 300, seed_rng), draw_seeds(1, 300, seed_rng)]
    two_level = hierarchical_distributions([[a, a, a], [b]], metric, 300, np.random.default_rng(9), draws)
    assert np.allclose(two_level, paired, atol=1e-12, rtol=0)
    assert np.all(draws[1] == 0)  # a single model is a side of one seed: always drawn


def test_hierarchical_bootstrap_seed_level_alone_draws_seeds_with_replacement():
    # seed 1 classifies every item right, seed 2 every item wrong: resampling items changes nothing, so each
    # replicate is the mean of two seeds drawn with replacement: 1 (1/4), 1/2 (1/2) or 0 (1/4)
    right, wrong = Scored([np.ones(20)]), Scored([np.zeros(20)])
    draws = draw_seeds(2, 4000, np.random.default_rng(3))
    dist = hierarchical_distributions([[right, wrong]], Metric(kind="accuracy"), 4000, np.random.default_rng(4), [draws])[0]
    assert set(np.unique(dist)) == {0.0, 0.5, 1.0}
    share = [np.mean(dist == v) for v in (0.0, 0.5, 1.0)]
    assert share == pytest.approx([0.25, 0.5, 0.25], abs=0.03)
    assert np.array_equal(dist, (draws == 0).mean(axis=1))  # the share of seed 1 among the seeds drawn
    with pytest.raises(ValueError, match="seed draws of shape"):
        hierarchical_distributions([[right, wrong]], Metric(kind="accuracy"), 10, np.random.default_rng(4), [draws])


def test_paired_bootstrap_p_counts_both_tails():
    assert paired_bootstrap_p(np.array([1.0, 2.0, 3.0, -1.0])) == pytest.approx(2 * 2 / 5)


@pytest.mark.parametrize("metric", [Metric(correlation="pearson"), Metric(correlation="spearman"), Metric(kind="accuracy")])
@pytest.mark.slow  # over 1 s: the fast tier stays under a minute
def test_permutation_test_equals_scipy_exactly_on_a_small_example(metric):
    x, y = _pairs(11, 0.5, 6)
    z = _pairs(11, 0.2, 7)[0]
    if metric.kind == "accuracy":
        a, b = Scored([(x > 0).astype(float)]), Scored([(z > 0.3).astype(float)])
    else:
        a, b = Scored([x], [y]), Scored([z], [y])
    from embench.stats.permutation import exchangeable, score_rows

    ea, eb = exchangeable(a, metric), exchangeable(b, metric)

    def stat(p, q, axis=-1):
        return score_rows(np.atleast_2d(p), a.gold, a.sizes, metric)[0] - score_rows(np.atleast_2d(q), a.gold, a.sizes, metric)[0]

    ref = sps.permutation_test((ea, eb), stat, permutation_type="samples", n_resamples=10_000, vectorized=False)
    observed, p = paired_permutation_test(a, b, metric, resamples=10_000)
    assert observed == pytest.approx(ref.statistic, abs=1e-12)
    assert p == pytest.approx(ref.pvalue, abs=1e-12)


@pytest.mark.slow
def test_permutation_test_agrees_with_scipy_within_monte_carlo_error():
    x, y = _pairs(200, 0.5, 8)
    z = x + 1.5 * np.random.default_rng(9).standard_normal(200)
    a, b, metric = Scored([x], [y]), Scored([z], [y]), Metric(correlation="spearman")
    from embench.stats.permutation import exchangeable

    ea, eb = exchangeable(a, metric), exchangeable(b, metric)

    def stat(p, q, axis=-1):
        return sps.spearmanr(p, y)[0] - sps.spearmanr(q, y)[0]

    ref = sps.permutation_test((ea, eb), stat, permutation_type="samples", n_resamples=2000, vectorized=False, rng=1)
    _, p = paired_permutation_test(a, b, metric, resamples=2000, rng=2)
    assert abs(p - ref.pvalue) < 4 * math.sqrt(ref.pvalue * (1 - ref.pvalue) / 2000) + 1e-3


def test_steiger_equals_a_hand_computation_of_equation_14():
    # r_A = .6, r_B = .4, r_AB = .5, n = 103: rbar = .5, psi = .5 * .5 - .125 * (.5 - .25) = .21875,
    # s = .21875 / .5625 = .388889, z_A - z_B = atanh(.6) - atanh(.4) = .693147 - .423649 = .269498,
    # Z = .269498 * sqrt(100) / sqrt(2 - .777778) = 2.694983 / 1.105542 = 2.437703
    z, p = steiger_test(0.6, 0.4, 0.5, 103)
    assert z == pytest.approx(2.437703, abs=1e-5)
    assert p == pytest.approx(2 * (1 - sps.norm.cdf(2.437703)), abs=1e-6)
    assert steiger_test(0.4, 0.6, 0.5, 103)[0] == pytest.approx(-z)


def test_holm_equals_a_hand_computation():
    # sorted .01, .02, .03, .04 of m = 4: x4 = .04, x3 = .06, x2 = .06, x1 = .04 -> monotone .04 .06 .06 .06
    assert holm([0.03, 0.01, 0.04, 0.02]) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    assert holm([0.5, float("nan"), 0.6]) [1] != holm([0.5, float("nan"), 0.6])[1]  # NaN stays NaN
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])


def test_seed_t_tests_and_their_errors():
    welch = seed_t_test([76.1, 75.8, 76.4], [75.0, 75.3, 74.9])
    ref = sps.ttest_ind([76.1, 75.8, 76.4], [75.0, 75.3, 74.9], equal_var=False)
    assert welch["p"] == pytest.approx(ref.pvalue) and "Welch" in welch["test"]
    one = seed_t_test([76.1, 75.8, 76.4], 75.0)
    assert one["p"] == pytest.approx(sps.ttest_1samp([76.1, 75.8, 76.4], 75.0).pvalue)
    with pytest.raises(EmbenchError, match="at least two seeds"):
        seed_t_test([76.1], 75.0, what="simcse")


def test_bad_resample_counts_are_refused():
    x, y = _pairs(10, 0.5, 1)
    for bad in (0, -5, 2.5):
        with pytest.raises(ValueError, match="resamples must be a positive integer"):
            bootstrap_distributions([Scored([x], [y])], Metric(), bad)



def test_a_resample_that_drew_one_value_only_has_no_pearson_r_as_in_scipy():
    """Item 0 drawn three times: its weighted mean is 0.1 only to rounding, and the 1e-17 deviations once gave r = 1.
    scipy's pearsonr of the materialised resample is NaN; so is every such resample here, whatever the copies."""
    from embench.stats.weighted import weighted_pearson

    x, y = np.array([0.1, 0.7, 0.3]), np.array([0.2, 0.9, 0.5])
    counts = np.array([[k, 0, 0] for k in range(2, 8)] + [[0, 0, 3], [2, 1, 0]])
    r = weighted_pearson(x, y, counts)
    with np.errstate(all="ignore"), pytest.warns(sps.ConstantInputWarning):
        want = [sps.pearsonr(np.repeat(x, c), np.repeat(y, c))[0] for c in counts]
    assert np.isnan(r[:-1]).all() and np.isnan(want[:-1]).all()
    assert r[-1] == pytest.approx(want[-1], abs=1e-12)


def test_pearson_r_of_no_items_is_nan_as_before():
    """The guard against rounding took the largest value of x and y, which raised on no items (NaN before it)."""
    from embench.stats.weighted import weighted_pearson

    with np.errstate(all="ignore"):
        assert np.isnan(weighted_pearson(np.array([]), np.array([])))
        assert np.isnan(weighted_pearson(np.array([]), np.array([]), np.zeros((3, 0)))).all()
