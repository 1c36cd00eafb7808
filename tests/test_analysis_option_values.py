"""Analysis option values (``analyze --set``, ``--eval-analysis``) are checked before any model loads."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from embench.analysis.option_values import RULES, check_values
from embench.analysis.registry import ANALYSES
from embench.cli import main
from embench.core.errors import EmbenchError


def test_every_analysis_default_passes_its_own_check():
    for name in ANALYSES.names():
        defaults = ANALYSES.get(name).options
        check_values(name, defaults, {k: list(v) if isinstance(v, tuple) else v for k, v in defaults.items()})


def test_every_rule_names_an_option_some_analysis_has():
    options = {k for n in ANALYSES.names() for k in ANALYSES.get(n).options}
    assert set(RULES) <= options, set(RULES) - options


@pytest.mark.parametrize(("key", "value", "words"), [
    ("n_pairs", -5, "n_pairs must be a whole number >= 1"),
    ("threshold", "abc", "threshold must be a finite number"),
    ("t", math.nan, "t must be a finite number > 0"),
    ("t", 0.0, "t must be a finite number > 0"),
    ("limit", 0, "limit must be a whole number >= 1"),
    ("limit", 2.5, "limit must be a whole number >= 1"),
    ("seed", -1, "seed must be a whole number from 0 to 4294967295"),
    ("test_size", 1.0, "test_size must be a fraction between 0 and 1"),
    ("edges", [3.0, 1.0], "edges must be increasing numbers, at least two"),
    ("n_jobs", 0, "n_jobs must be a whole number, -1 for every core"),
    ("sigma", 1.5, "sigma must be a cosine in [-1, 1]"),
    ("k", True, "k must be a whole number >= 1"),
    ("metric", "cosin", "metric must be one of euclidean, cosine"),
    ("metric", ["cosine", "cosin"], "metric must be one of euclidean, cosine"),  # knn takes several
    ("transform", "white", "transform must be one of raw, centred, whitened"),
])
def test_a_value_of_the_wrong_type_or_out_of_range_is_named(key, value, words):
    with pytest.raises(EmbenchError, match=f"analysis 'a': {key}=.* is not allowed; {words}".replace("[", r"\[").replace("]", r"\]")):
        check_values("a", {key: None}, {key: value})


def test_none_is_allowed_only_where_it_is_the_default():
    check_values("a", {"limit": None}, {"limit": None})
    with pytest.raises(EmbenchError, match="limit=None"):
        check_values("a", {"limit": 5000}, {"limit": None})
    check_values("a", {"n_jobs": 1}, {"n_jobs": -1})


def _main(args, capsys, monkeypatch) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["embench", *map(str, args)])
    with pytest.raises(SystemExit) as exit_:
        main()
    return exit_.value.code, " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize(("analysis", "pair", "message"), [
    ("spectrum", "n_pairs=-5", "spectrum': n_pairs=-5 is not allowed"),
    ("alignment-uniformity", "threshold=abc", "threshold='abc' is not allowed"),
    ("alignment-uniformity", "t=nan", "t=nan is not allowed"),
    ("token-dependency", "limit=0", "limit=0 is not allowed"),
    ("knn", "metric=cosin", "knn': metric=['cosin'] is not allowed"),  # was found after every dataset was encoded
    ("layers", "transform=white", "layers': transform='white' is not allowed"),
])
def test_analyze_set_refuses_a_bad_value_before_loading_the_model(env, capsys, monkeypatch, analysis, pair, message):
    code, err = _main(["analyze", analysis, "-m", "no-such-model", "--set", pair, "-o", env / "out"], capsys, monkeypatch)
    assert code == 2 and message in err and "no-such-model" not in err and "Traceback" not in err, err
    assert not (env / "out").exists()


def test_eval_analysis_refuses_a_bad_value_when_read():
    from embench.train.callbacks import analysis_specs

    with pytest.raises(EmbenchError, match=r"--eval-analysis 'alignment-uniformity:t=-1': t=-1 is not allowed"):
        analysis_specs(["alignment-uniformity:t=-1"])
    assert analysis_specs(["alignment-uniformity:t=3"])[0].options == {"t": 3}


def test_a_labelled_set_s_name_is_checked_before_any_model_loads():
    """`--eval-analysis knn:nosuchset` was refused only after training's step-0 evaluation had run; `analyze knn
    --set datasets=banking` after the model had loaded."""
    from embench.analysis.base import check_options
    from embench.analysis.labelled import check_set_names
    from embench.core.errors import UnknownNameError
    from embench.train.callbacks import analysis_specs

    with pytest.raises(UnknownNameError, match="unknown labelled set 'nosuchset'"):
        analysis_specs(["knn:nosuchset"])
    with pytest.raises(UnknownNameError, match="unknown labelled set 'banking'. Did you mean 'banking77'"):
        check_options("knn", {"datasets": ("trec",)}, {"datasets": ["trec", "banking"]})
    with pytest.raises(UnknownNameError, match="unknown labelled set 'agnew'"):
        check_options("layers", {"dataset": "banking77"}, {"dataset": "agnew"})
    check_set_names({"datasets": ["20ng", "ag_news"]})  # aliases are names too
    check_set_names({"dataset": ""})  # layers without a labelled set: no kNN column


def test_an_option_no_rule_names_takes_the_type_of_its_default():
    """A plug-in analysis' ``n: int = 50`` took ``--set n=abc`` and failed inside it (a slice TypeError)."""
    check_values("my-loss", {"n": 50, "scale": 0.5, "label": "x"}, {"n": 20, "scale": 1, "label": "y"})
    with pytest.raises(EmbenchError, match=r"analysis 'my-loss': n='abc' is not allowed; n must be an integer"):
        check_values("my-loss", {"n": 50}, {"n": "abc"})
    with pytest.raises(EmbenchError, match=r"scale='big' is not allowed; scale must be a number"):
        check_values("my-loss", {"scale": 0.5}, {"scale": "big"})


def test_heads_is_mean_concat_or_a_head_number_before_the_model_runs():
    """``analyze attention --heads foo`` ended in int()'s ValueError traceback, inside the forward pass."""
    from embench.analysis.attention import head_reduce

    check_values("attention", {"heads": "mean"}, {"heads": "3"})
    with pytest.raises(EmbenchError, match=r"heads='foo' is not allowed; heads must be mean, concat or a head's number"):
        check_values("attention", {"heads": "mean"}, {"heads": "foo"})
    with pytest.raises(EmbenchError, match=r"--heads 'concat': the attention maps take mean or one head's number"):
        head_reduce(np.zeros((2, 3, 3)), "concat")
