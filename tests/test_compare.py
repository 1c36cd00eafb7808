"""`embench compare` and seed groups: paired tests on the same items, refusals, a bootstrap over seeds and items."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest
from scipy import stats as sps
from typer.testing import CliRunner

import embench
from embench.cli import app
from embench.core.errors import EmbenchError
from embench.evaluation.comparison import Side, compare_sides
from embench.evaluation.items import Items
from embench.evaluation.results import Record
from embench.evaluation.seed_comparison import (
    FewSeedsWarning,
    SeedSide,
    compare_seed_groups,
    few_seeds_message,
)
from embench.evaluation.seed_groups import write_seed_group
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


def test_a_verdict_is_asked_by_the_table_name_the_task_s_own_name_or_an_alias():
    """verdict("STSBenchmark") and verdict("STSB") raised pandas' KeyError: only the table's name, STS-B, was a row."""
    from embench.tasks.names import with_task_aliases

    rng = np.random.default_rng(1)
    gold = rng.random(300)
    a, b = (dataclasses.replace(s, record=dataclasses.replace(s.record, task="STSBenchmark", display="STS-B"))
            for s in (_side("A", gold + 0.2 * rng.standard_normal(300), gold), _side("B", rng.random(300), gold)))
    settings = IntervalSettings(resamples=200)
    with pytest.warns(FewSeedsWarning):  # a group of one seed: its table is all this test reads
        group = compare_seed_groups(SeedSide("A", {"STS-B": [a]}), SeedSide("B", {"STS-B": [b]}, group=False), settings)
    for c in (with_task_aliases(compare_sides([(a, b)], settings)), with_task_aliases(group)):
        assert [c.verdict(t) for t in ("STS-B", "STSBenchmark", "STSB", "stsb", "avg.")] == ["A better"] * 5
        with pytest.raises(EmbenchError, match=r"task 'STS12' was not compared; the comparison has STS-B, Avg\.$"):
            c.verdict("STS12")


def _on(side: Side, task: str) -> Side:
    """The same outcomes under another task's name (a second task of a suite)."""
    return Side(dataclasses.replace(side.record, task=task, display=task), side.items)


def _group(name: str, seeds: list[Side], tasks: tuple[str, ...] = ("STS16",)) -> SeedSide:
    return SeedSide(name, {t: [_on(s, t) for s in seeds] for t in tasks})


def _model(side: Side, tasks: tuple[str, ...] = ("STS16",)) -> SeedSide:
    return SeedSide(side.record.model, {t: [_on(side, t)] for t in tasks}, group=False)


def test_a_group_whose_seeds_agree_is_tested_exactly_as_the_paired_item_bootstrap():
    rng = np.random.default_rng(1)
    gold = rng.random(200)
    a, b = gold + 0.5 * rng.standard_normal(200), gold + 0.8 * rng.standard_normal(200)
    seeds = [_side(f"seed-{i}", a, gold) for i in range(3)]  # three seeds, one outcome: no seed variance
    tasks, settings = ("STS16", "STS15"), IntervalSettings(resamples=400)
    two_level = compare_seed_groups(_group("simcse", seeds, tasks), _model(_side("B", b, gold), tasks), settings)
    paired = compare_sides([(_on(_side("A", a, gold), t), _on(_side("B", b, gold), t)) for t in tasks], settings)
    for row in ("STS16", "STS15", "Avg."):
        for col, want in (("diff", "diff"), ("diff low", "diff low"), ("diff high", "diff high"),
                          ("p hierarchical bootstrap", "p bootstrap")):
            assert two_level.frame.loc[row, col] == pytest.approx(paired.frame.loc[row, want], abs=1e-12)
    assert two_level.verdict() == paired.verdict() and two_level.test == "hierarchical bootstrap"
    assert "hierarchical bootstrap" in two_level.notes[1] and "Davison & Hinkley" in two_level.notes[1]


def test_two_close_seeds_against_a_model_are_not_significant_where_the_t_test_said_they_were():
    rng = np.random.default_rng(2)
    gold = rng.random(300)
    base = gold + 0.5 * rng.standard_normal(300)
    seeds = [_side(f"seed-{i}", base + 0.01 * rng.standard_normal(300), gold) for i in range(2)]
    b = _side("B", gold + 0.5 * rng.standard_normal(300), gold)
    scores = [s.record.main_score for s in seeds]
    t_test = sps.ttest_1samp(scores, b.record.main_score)  # the old test: seeds alone, df = 1
    assert t_test.statistic > 100 and t_test.pvalue < 0.01
    with pytest.warns(FewSeedsWarning):
        c = compare_seed_groups(_group("simcse", seeds), _model(b), IntervalSettings(resamples=500))
    row = c.frame.loc["STS16"]
    assert row["diff"] == pytest.approx(np.mean(scores) - b.record.main_score)
    assert row["p hierarchical bootstrap"] > 0.05 and row["diff low"] < 0 < row["diff high"]
    assert c.verdict("STS16") == "no significant difference" and row["A seeds"] == 2 and row["B seeds"] == 1


def test_seeds_that_disagree_widen_the_interval():
    rng = np.random.default_rng(3)
    gold = rng.random(300)
    spread = [gold + sd * rng.standard_normal(300) for sd in (0.2, 0.5, 1.5)]
    b = _model(_side("B", gold + 0.8 * rng.standard_normal(300), gold))
    settings = IntervalSettings(resamples=500)
    wide = compare_seed_groups(_group("spread", [_side(f"s{i}", x, gold) for i, x in enumerate(spread)]), b, settings)
    narrow = compare_seed_groups(_group("same", [_side(f"t{i}", spread[1], gold) for i in range(3)]), b, settings)

    def width(c):
        return c.frame.loc["STS16", "diff high"] - c.frame.loc["STS16", "diff low"]

    assert width(wide) > 2 * width(narrow)
    assert narrow.verdict("STS16") == "A better" and wide.verdict("STS16") == "no significant difference"


def test_a_group_of_fewer_than_three_seeds_is_warned_about_by_name():
    rng = np.random.default_rng(4)
    gold = rng.random(100)
    seeds = [_side(f"seed-{i}", gold + rng.standard_normal(100), gold) for i in range(3)]
    b = _model(_side("B", gold + rng.standard_normal(100), gold))
    settings = IntervalSettings(resamples=50)
    with pytest.warns(FewSeedsWarning, match=r"^simcse has only 2 seed\(s\): its seed variance is poorly estimated; "
                                             r"train more with --seeds"):
        two = compare_seed_groups(_group("simcse", seeds[:2]), b, settings)
    assert two.warnings == [few_seeds_message(_group("simcse", seeds[:2]))] and "Warning: simcse" in two.notes[-1]
    with warnings.catch_warnings():
        warnings.simplefilter("error", FewSeedsWarning)  # three seeds, and a single model, are not warned about
        three = compare_seed_groups(_group("simcse", seeds), b, settings)
        both = compare_seed_groups(_group("simcse", seeds), _group("other", seeds[::-1]), settings)
    assert three.warnings == [] and both.frame.loc["STS16", "B seeds"] == 3
    with pytest.raises(EmbenchError, match="--test permutation: a seed group is compared by the hierarchical bootstrap"):
        compare_seed_groups(_group("simcse", seeds), b, settings, test="permutation")


@pytest.mark.slow
def test_cli_compare_of_a_two_seed_group_runs_the_hierarchical_bootstrap_and_warns(tmp_path, data_root, tiny_model,
                                                                                     tiny_bert_dir, one_thread):
    from transformers import BertConfig, BertModel

    def variant(seed: int):
        def make(vocab: int) -> BertModel:
            import torch

            model = BertModel(BertConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                         intermediate_size=64, max_position_embeddings=512))
            torch.manual_seed(seed)  # a second "seed" of the same recipe: the same model, other weights
            for w in model.parameters():
                w.data += 0.02 * torch.randn_like(w)
            return model
        return tiny_model(f"tiny-bert-seed-{seed}", make)

    group = tmp_path / "tiny-group"
    group.mkdir()
    write_seed_group(group, {1: variant(1), 2: variant(2)}, {"recipe": "test"})
    args = ["compare", "-m", str(group), "-m", str(tiny_bert_dir), "-t", "STS16", "--data", str(data_root),
            "--results-dir", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache"), "--resamples", "200", "-q"]
    r = runner.invoke(app, [*args, "-f", "json"])
    assert r.exit_code == 0, r.output
    rows = {row["task"]: row for row in json.loads(r.stdout)["rows"]}
    assert rows["STS16"]["A seeds"] == 2 and rows["STS16"]["B seeds"] == 1
    assert 0 <= rows["STS16"]["p hierarchical bootstrap"] <= 1 and rows["STS16"]["diff low"] <= rows["STS16"]["diff high"]
    assert r.stderr.count("warning: tiny-group has only 2 seed(s): its seed variance is poorly estimated") == 1
    table = runner.invoke(app, args)
    assert "hierarchical bootstrap" in table.stdout and "A = tiny-group (2 seeds)" in table.stdout
    refused = runner.invoke(app, [*args, "--test", "steiger"])
    assert isinstance(refused.exception, EmbenchError) and "hierarchical bootstrap" in str(refused.exception)


@pytest.mark.slow
def test_cli_compare_minilm_with_a_random_model(tmp_path, data_root, tiny_bert_dir, minilm_cache, one_thread):
    args = ["compare", "-m", "all-MiniLM-L6-v2", "-m", str(tiny_bert_dir), "-t", "STS16", "--data", str(data_root),
            "--results-dir", str(tmp_path / "results"), "--cache-dir", str(minilm_cache), "--resamples", "300", "-q"]
    r = runner.invoke(app, [*args, "-f", "json"])
    assert r.exit_code == 0, r.output
    rows = {row["task"]: row for row in json.loads(r.stdout)["rows"]}
    assert rows["STS16"]["verdict"] == "A better" and rows["STS16"]["diff low"] > 0.2
    assert json.loads(r.stdout)["model_a"] == "all-MiniLM-L6-v2" and json.loads(r.stdout)["scale"].startswith("fractions")
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
    assert "hierarchical bootstrap" in c.stdout and "A = seeds (3 seeds), B = " in c.stdout
    both = runner.invoke(app, [*base, "--seeds", "1-2", "--seed", "4"])
    assert isinstance(both.exception, EmbenchError) and "not both" in str(both.exception)


def test_seed_lists_are_parsed_or_named_in_the_error():
    from embench.evaluation.seed_groups import parse_seeds

    assert parse_seeds("1-3,7,2") == [1, 2, 3, 7]
    for bad in ("5-1", "a", "1-", ""):
        with pytest.raises(EmbenchError, match="--seeds"):
            parse_seeds(bad)


def test_the_interval_note_says_a_seed_group_row_has_none():
    """``run --ci 95`` on a seed group said "95% intervals: ..." over a row of mean ± std with no interval."""
    from embench.evaluation.evaluation_view import Evaluation
    from embench.evaluation.significance import IntervalSettings

    ev = Evaluation(records=[], interval_settings=IntervalSettings.parse(95), seed_groups={"simcse": ["a"]})
    assert "a seed group's row (simcse) is the mean ± std over its seeds, without an interval" in ev.interval_note()
    assert "seed group" not in Evaluation(records=[], interval_settings=ev.interval_settings).interval_note()
