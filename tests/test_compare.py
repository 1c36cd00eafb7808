"""`embench compare` and seed groups: paired tests on the same items, refusals, t-tests over training seeds."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as sps
from typer.testing import CliRunner

import embench
from embench.cli import app
from embench.core.errors import EmbenchError
from embench.evaluation.comparison import Side, compare_seeds, compare_sides
from embench.evaluation.items import Items
from embench.evaluation.results import Record
from embench.evaluation.significance import IntervalSettings

runner = CliRunner()


def _side(model: str, sims: np.ndarray, gold: np.ndarray, digest: str = "d", **protocol) -> Side:
    proto = {"aggregation": "all", "correlation": "spearman", "text": "senteval", **protocol}
    rec = Record(task="STS16", display="STS16", kind="sts", model=model, main_score=float(sps.spearmanr(sims, gold)[0]),
                 scores={}, protocol=proto, encoder={})
    return Side(rec, Items("correlation", ["all"], [sims], [gold], digest))


def test_pairs_scored_under_different_protocols_or_on_different_items_are_refused():
    rng = np.random.default_rng(0)
    gold, a, b = rng.random(50), rng.random(50), rng.random(50)
    with pytest.raises(EmbenchError, match="different protocols \\(text: 'senteval' vs 'raw'\\)"):
        compare_sides([(_side("A", a, gold), _side("B", b, gold, text="raw"))], IntervalSettings(resamples=50))
    with pytest.raises(EmbenchError, match="different items"):
        compare_sides([(_side("A", a, gold), _side("B", b, gold, digest="other"))], IntervalSettings(resamples=50))
    no_items = _side("B", b, gold)
    no_items.items = None
    with pytest.raises(EmbenchError, match="no per-item outcomes"):
        compare_sides([(_side("A", a, gold), no_items)], IntervalSettings(resamples=50))


def test_a_clear_difference_is_found_and_a_model_against_itself_is_not():
    rng = np.random.default_rng(1)
    gold = rng.random(400)
    good, bad = gold + 0.2 * rng.standard_normal(400), gold + 2.0 * rng.standard_normal(400)
    settings = IntervalSettings(resamples=500)
    c = compare_sides([(_side("A", good, gold), _side("B", bad, gold))], settings)
    row = c.frame.loc["STS16"]
    assert row["verdict"] == "A better" and row["p bootstrap"] < 0.01 and row["p permutation"] < 0.01 and row["p steiger"] < 0.01
    assert row["diff low"] > 0 and c.verdict() == "A better"
    same = compare_sides([(_side("A", good, gold), _side("B", good, gold))], settings)
    assert same.frame.loc["STS16", "diff"] == 0 and same.frame.loc["STS16", "p bootstrap"] == 1.0
    assert same.verdict("STS16") == "no significant difference"


def test_seed_groups_are_tested_with_t_tests_and_need_two_seeds():
    a = {"STS-B": [0.80, 0.81, 0.79], "Avg.": [0.75, 0.76, 0.74]}
    b = {"STS-B": [0.70, 0.71, 0.69], "Avg.": [0.70, 0.72, 0.71]}
    c = compare_seeds("simcse", a, "base", b)
    assert c.frame.loc["STS-B", "p t-test"] == pytest.approx(sps.ttest_ind(a["STS-B"], b["STS-B"], equal_var=False).pvalue)
    assert c.verdict("STS-B") == "A better"
    one = compare_seeds("simcse", a, "base", {"STS-B": [0.70], "Avg.": [0.71]})
    assert one.frame.loc["STS-B", "p t-test"] == pytest.approx(sps.ttest_1samp(a["STS-B"], 0.70).pvalue)
    reverse = compare_seeds("base", {"STS-B": [0.70], "Avg.": [0.71]}, "simcse", a)
    assert reverse.verdict("STS-B") == "B better" and reverse.frame.loc["STS-B", "t"] < 0
    with pytest.raises(EmbenchError, match="at least two seeds"):
        compare_seeds("x", {"STS-B": [0.8], "Avg.": [0.8]}, "y", {"STS-B": [0.7], "Avg.": [0.7]})


@pytest.mark.slow
def test_cli_compare_minilm_with_a_random_model(tmp_path, data_root, tiny_bert_dir, minilm_cache, one_thread):
    args = ["compare", "-m", "all-MiniLM-L6-v2", "-m", str(tiny_bert_dir), "-t", "STS16", "--data", str(data_root),
            "--results-dir", str(tmp_path / "results"), "--cache-dir", str(minilm_cache), "--resamples", "300", "-q"]
    r = runner.invoke(app, [*args, "-f", "json"])
    assert r.exit_code == 0, r.output
    rows = {row["task"]: row for row in json.loads(r.stdout)}
    assert rows["STS16"]["verdict"] == "A better" and rows["STS16"]["diff low"] > 0.2
    assert rows["STS16"]["A"] == pytest.approx(0.7899, abs=1e-4)  # the reference score, as `run` gives it
    table = runner.invoke(app, args)
    assert "Holm-corrected" in table.stdout and "A = all-MiniLM-L6-v2" in table.stdout
    bad = runner.invoke(app, [*args[:3]])
    assert isinstance(bad.exception, EmbenchError) and "exactly two models" in str(bad.exception)


@pytest.mark.slow
def test_train_seeds_makes_a_group_that_run_and_compare_read_as_one_model(tmp_path, data_root, tiny_bert_dir, one_thread):
    cfg = tmp_path / "run.toml"
    cfg.write_text('method = "dropout"\nbatch_size = 8\nmax_length = 24\nmax_examples = 64\nlr = 1e-3\n')
    out = tmp_path / "seeds"
    base = ["train", "--config", str(cfg), "--model", str(tiny_bert_dir), "--train-data", "20newsgroups", "--out", str(out),
            "--data", str(data_root), "--max-steps", "2", "--eval-steps", "0", "--quiet"]
    r = runner.invoke(app, [*base, "--seeds", "1-2"])
    assert r.exit_code == 0, r.output
    group = json.loads((out / "seeds.json").read_text())
    assert sorted(group["members"]) == ["1", "2"] and group["config"]["max_steps"] == 2
    again = runner.invoke(app, [*base, "--seeds", "1-3"])  # seeds 1 and 2 are kept, only 3 trains
    assert again.exit_code == 0 and again.output.count("already trained") == 2
    env = ["--data", str(data_root), "--results-dir", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache"), "-q"]
    ev = embench.evaluate(str(out), tasks=["STS16"], data=data_root, results_dir=tmp_path / "results", cache_dir=tmp_path / "cache")
    row = ev.frame.loc["seeds (mean of 3 seeds)"]
    scores = [r.main_score for r in ev.records]
    assert len(scores) == 3 and row["STS16"] == pytest.approx(np.mean(scores))
    assert ev.spreads[("seeds (mean of 3 seeds)", "STS16")] == pytest.approx(np.std(scores, ddof=1))
    shown = runner.invoke(app, ["run", "--model", str(out), "--task", "STS16", *env, "-f", "markdown"])
    assert "seeds (mean of 3 seeds)" in shown.stdout and " ± " in shown.stdout
    c = runner.invoke(app, ["compare", "--model", str(out), "--model", str(tiny_bert_dir), "--task", "STS16", *env])
    assert c.exit_code == 0, c.output
    assert "one-sample t-test" in c.stdout
    both = runner.invoke(app, [*base, "--seeds", "1-2", "--seed", "4"])
    assert isinstance(both.exception, EmbenchError) and "not both" in str(both.exception)


def test_seed_lists_are_parsed_or_named_in_the_error():
    from embench.evaluation.seed_groups import parse_seeds

    assert parse_seeds("1-3,7,2") == [1, 2, 3, 7]
    for bad in ("5-1", "a", "1-", ""):
        with pytest.raises(EmbenchError, match="--seeds"):
            parse_seeds(bad)
