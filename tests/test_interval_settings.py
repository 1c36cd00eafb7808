"""How --ci reads a level and which seed draws the bootstrap, in `run` and `compare` alike."""

from __future__ import annotations

import pytest

from embench.core.errors import EmbenchError
from embench.evaluation.significance import IntervalSettings


@pytest.mark.parametrize(("given", "level"), [(1, 0.01), ("1", 0.01), (0.95, 0.95), (95, 0.95), ("99.5", 0.995), (0.5, 0.5)])
def test_a_level_below_1_is_a_fraction_and_from_1_a_percentage(given, level):
    """--ci 1 (1 %) was read as the fraction 1.0 and refused."""
    assert IntervalSettings.parse(given).level == pytest.approx(level)


@pytest.mark.parametrize("given", [0, 100, 250, -5, float("nan"), float("inf"), True, "ninety"])
def test_a_level_outside_the_rule_is_refused_with_the_rule(given):
    with pytest.raises(EmbenchError, match=r"^--ci .*: a confidence level: a fraction between 0 and 1 \(0\.95\) or a "
                                           r"percentage from 1 to below 100 \(95\)$"):
        IntervalSettings.parse(given)


@pytest.mark.slow
def test_compare_draws_with_the_protocol_s_seed_as_run_does(env, tiny_bert_dir, one_thread):
    """compare drew with 1111 whatever the protocol's seed, re-saving the interval `run --seed 7 --ci` had stored."""
    import embench
    from embench.evaluation.results import ResultStore

    model = str(tiny_bert_dir)
    run = embench.evaluate(model, tasks=["STS16"], seed=7, ci=95, resamples=200)
    path = ResultStore().path(run.records[0])
    before = path.read_text()
    other = {"options_b": {"pooling": "mean"}}  # B: the model under another pooling (itself against itself is refused)
    c = embench.compare(model, model, tasks=["STS16"], seed=7, resamples=200, **other)
    assert c.settings.seed == 7 and "seed 7" in " ".join(c.notes)
    assert path.read_text() == before  # run's interval is the one compare drew: nothing re-saved
    assert embench.compare(model, model, tasks=["STS16"], resamples=200, ci_seed=3, **other).settings.seed == 3
    assert embench.compare(model, model, tasks=["STS16"], resamples=200, **other).settings.seed == 1111
