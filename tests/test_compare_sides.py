"""compare, one checkpoint against itself under two settings: ``--set-a``/``--set-b KEY=VALUE`` on the command line,
``options_a``/``options_b`` in Python (embench/evaluation/side_settings.py, embench/cli/side_options.py).

"Is CLS pooling worse than mean for this checkpoint?" could not be asked from the command line: compare had no
--pooling at all, and ``-m X -m X`` compared X with itself, printing "A = X, B = X" over a difference of 0."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

import embench
from embench.cli import app
from embench.core.errors import EmbenchError, UnknownNameError
from embench.evaluation.side_settings import (
    check_distinct_records,
    check_two_sides,
    side_key,
    side_names,
    side_options,
)

runner = CliRunner()


def test_a_key_is_a_setting_s_python_name_with_dashes_or_underscores():
    assert side_key("max-length", "--set-b") == side_key("max_length", "--set-b") == "max_length"
    assert side_key(" prompt-name", "--set-b") == "prompt_name"
    with pytest.raises(UnknownNameError, match=r"^options_b: unknown model setting 'poling'\. Did you mean 'pooling'\?"):
        side_key("poling", "options_b")
    # a setting of the run is no typo: it is said why it cannot be one side's
    for shared in ("device", "batch-size", "aggregation", "stsb_split", "seed"):
        with pytest.raises(EmbenchError, match=r"^--set-a: \w+ is one setting for both sides"):
            side_key(shared, "--set-a")


def test_a_side_s_own_setting_wins_over_the_shared_one():
    shared = {"pooling": "mean", "layer": None, "tasks": ["STS12"]}
    assert side_options(shared, {"pooling": "cls"}, "options_b", "X") == {"pooling": "cls", "layer": None, "tasks": ["STS12"]}
    assert side_options(shared, None, "options_a", "X") == shared
    assert side_options(shared, {"pooling": None}, "options_a", "X")["pooling"] == "mean"  # None: not set
    with pytest.raises(EmbenchError, match=r"^options_b: a dict of settings, such as \{'pooling': 'cls'\} \(got str\)"):
        side_options(shared, "cls", "options_b", "X")
    with pytest.raises(EmbenchError, match="given twice"):
        side_options(shared, {"max-length": 8, "max_length": 16}, "options_b", "X")


def test_an_encoder_object_side_takes_no_loading_setting_but_a_vector_one():
    """as_encoder refused them too, but only once side A had been evaluated whole."""
    obj = object()
    with pytest.raises(EmbenchError, match=r"^options_a: layer, pooling: how a model is loaded, and this side is an "
                                           r"encoder loaded already; give the model by name, or load it so"):
        side_options({}, {"pooling": "cls", "layer": 1}, "options_a", obj)
    assert side_options({}, {"truncate_dim": 8}, "options_a", obj) == {"truncate_dim": 8}


def test_one_model_with_one_set_of_settings_on_both_sides_is_refused(tmp_path):
    names = ("--model", "--set-b pooling=cls")
    with pytest.raises(EmbenchError, match=r"^--model: both sides are X with the same settings, so every difference is "
                                           r"0 by construction; give one side settings of its own, e.g. --set-b pooling=cls"):
        check_two_sides(["X", "X"], [{"pooling": None}, {}], names)
    with pytest.raises(EmbenchError, match="same settings"):  # the shared pooling, and B's own, the same
        check_two_sides(["X", "X"], [{"pooling": "cls"}, {"pooling": "cls"}], names)
    (tmp_path / "m").mkdir()
    with pytest.raises(EmbenchError, match="same settings"):  # one folder, written two ways
        check_two_sides([str(tmp_path / "m"), tmp_path / "." / "m"], [{}, {}], names)
    obj = object()
    with pytest.raises(EmbenchError, match="same settings"):
        check_two_sides([obj, obj], [{}, {}], names)
    check_two_sides(["X", "X"], [{"pooling": "mean"}, {"pooling": "cls"}], names)
    check_two_sides(["X", "Y"], [{}, {}], names)
    check_two_sides([obj, obj], [{}, {"truncate_dim": [8]}], names)
    check_two_sides([object(), object()], [{}, {}], names)  # two objects: their records tell (a fingerprint each)


def test_a_side_is_named_by_its_model_and_the_settings_that_tell_the_two_apart():
    mean = {"fingerprint": "f1", "pooling": "mean", "layer": 6, "max_length": 256, "prompt": ""}
    cls = {**mean, "pooling": "cls"}
    assert side_names(["X", "X"], [mean, cls]) == ("X (pooling=mean)", "X (pooling=cls)")
    assert side_names(["X", "X"], [mean, {**cls, "layer": 3}]) == ("X (pooling=mean, layer=6)", "X (pooling=cls, layer=3)")
    # two models: their names tell them apart; a setting is named only when a side was given it alone
    assert side_names(["X", "Y"], [mean, {**cls, "max_length": 512}]) == ("X", "Y")
    assert side_names(["X", "Y"], [mean, cls], ["pooling"]) == ("X (pooling=mean)", "Y (pooling=cls)")
    # a setting unset reads as the tables read it; weights alone apart: their fingerprints
    assert side_names(["X", "X"], [mean, {**mean, "prompt": "query: {text}"}]) == ("X (prompt=none)", "X (prompt=query: {text})")
    assert side_names(["X", "X"], [mean, {**mean, "fingerprint": "f2"}]) == ("X (fingerprint=f1)", "X (fingerprint=f2)")


def test_two_sides_whose_records_are_the_same_are_refused():
    """An alias and its folder, or B's setting spelling the model's own default: known only once the records are."""
    def rec(key, fingerprint="f"):
        return SimpleNamespace(key=key, model="X", encoder={"fingerprint": fingerprint})

    with pytest.raises(EmbenchError, match=r"^A \(X\) and B \(X\) resolve to the same weights and settings"):
        check_distinct_records([rec("k1"), rec("k2")], [rec("k1"), rec("k2")])
    check_distinct_records([rec("k1"), rec("k2")], [rec("k1"), rec("k3")])
    check_distinct_records([rec("k1", None)], [rec("k1", None)])  # two objects without a fingerprint: keys cannot tell


def _invoke(captured, *args):
    r = runner.invoke(app, ["compare", "-m", "M", "-m", "M", *args])
    assert r.exit_code == 0, r.output
    return captured["compare"]


@pytest.mark.slow  # over 0.3 s on 2 cores: a dozen commands parsed
def test_set_a_and_set_b_reach_the_api_typed_as_their_options(captured):
    given = _invoke(captured, "--pooling", "mean", "--set-b", "pooling=cls", "--set-a", "layer=1", "--set-a", "max-length=8",
                    "--set-b", "normalize=false", "--set-b", "dtype=bf16", "--set-b", "truncate-dim=16",
                    "--set-b", "bidirectional_last=0", "--set-b", "prompt=query: {text}", "--set-a", "family=bert")
    assert given["pooling"] == "mean"  # the shared one, for both; B's own wins in compare (test above)
    assert given["options_a"] == {"layer": 1, "max_length": 8, "family": "bert"}  # family: load_model's, no flag
    assert given["options_b"] == {"pooling": "cls", "normalize": False, "dtype": "bf16", "truncate_dim": [16],
                                  "bidirectional_last": 0, "prompt": "query: {text}"}
    assert type(given["options_b"]["dtype"]) is str  # the plain value, not the CLI's Enum
    assert _invoke(captured, "--set-b", "pooling=cls")["options_a"] == {}
    # the model options every other command has, which compare lacked (one setting for both sides)
    assert _invoke(captured, "--set-b", "pooling=cls", "--layer", "1", "--prompt", "bellm")["layer"] == 1


@pytest.mark.parametrize(("args", "message"), [
    (["--set-b", "layer=abc"], "Invalid value for --set-b layer=abc: Input should be a valid integer"),
    (["--set-b", "normalize=maybe"], "Invalid value for --set-b normalize=maybe: Input should be a valid boolean"),
    (["--set-b", "dtype=fp8"], "Invalid value for --set-b dtype=fp8: 'fp8' is not one of 'fp32', 'bf16', 'fp16'"),
    (["--set-b", "bidirectional-last=-1"], "Invalid value for --set-b bidirectional_last=-1: Input should be greater "
                                           "than or equal to 0"),
    (["--set-b", "poling=cls"], "Invalid value for --set-b: unknown model setting 'poling'. Did you mean 'pooling'?"),
    (["--set-a", "device=cpu"], "Invalid value for --set-a: device is one setting for both sides"),
    (["--set-b", "pooling"], "Invalid value for --set-b: 'pooling': expected KEY=VALUE, e.g. pooling=cls"),
    (["--set-b", "pooling="], "expected KEY=VALUE"),
    (["--set-b", "pooling=cls", "--set-b", "pooling=mean"], "Invalid value for --set-b: pooling given twice"),
])
def test_a_bad_side_setting_is_a_usage_error_as_its_option_s_would_be(args, message):
    r = runner.invoke(app, ["compare", "-m", "M", "-m", "M", *args])
    assert r.exit_code == 2 and message in " ".join(r.output.split()), r.output


def test_the_cli_refuses_one_model_twice_with_one_set_of_settings_before_anything_loads(captured):
    for args in ([], ["--pooling", "cls", "--set-b", "pooling=cls"], ["--set-a", "layer=1", "--set-b", "layer=1"]):
        r = runner.invoke(app, ["compare", "-m", "M", "-m", "M", *args])
        assert isinstance(r.exception, EmbenchError) and "compare" not in captured, r.output
        assert str(r.exception).startswith("--model: both sides are M with the same settings") and "--set-b" in str(r.exception)
    r = runner.invoke(app, ["compare", "-m", "M", "-m", "M", "--set-b", "pooling=clss"])
    assert isinstance(r.exception, UnknownNameError) and "Did you mean 'cls'" in str(r.exception)


# ---------------------------------------------------------------- end to end with a tiny model

STSB_DEV = ["-t", "STSBenchmark", "--stsb-split", "dev"]


def _run_score(model: str, pooling: str) -> float:
    r = runner.invoke(app, ["run", "-m", model, *STSB_DEV, "--pooling", pooling, "-q", "-f", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["rows"][0]["STS-B"]


@pytest.mark.slow
def test_cls_against_mean_pooling_of_one_checkpoint_reuses_run_s_records(env, tiny_bert_dir, one_thread, monkeypatch):
    """The diff is A - B of the two `embench run` scores, from run's records as stored (nothing encoded or scored
    again), and the table names each side by its pooling. The tiny BERT's own pooling is cls (an encoder's default)."""
    import embench.api

    model = str(tiny_bert_dir)
    cls, mean = _run_score(model, "cls"), _run_score(model, "mean")
    assert cls != mean
    scored = embench.api._scored

    def nothing_again(pending, *args, **kwargs):  # every record compare needs is run's
        assert not pending, [p[0] for p in pending]
        return scored(pending, *args, **kwargs)

    monkeypatch.setattr(embench.api, "_scored", nothing_again)
    args = ["compare", "-m", model, "-m", model, *STSB_DEV, "--pooling", "mean", "--set-b", "pooling=cls", "--resamples", "100"]
    r = runner.invoke(app, [*args, "-q", "-f", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    row = {row["task"]: row for row in out["rows"]}["STS-B"]
    assert (row["A"], row["B"]) == (mean, cls) and row["diff"] == pytest.approx(mean - cls, abs=1e-12)
    assert (out["model_a"], out["model_b"]) == (f"{model} (pooling=mean)", f"{model} (pooling=cls)")
    assert len(list((env / "results").rglob("STSBenchmark-*.json"))) == 2  # one record per pooling, no third
    table = runner.invoke(app, args)
    assert f"A = {model} (pooling=mean), B = {model} (pooling=cls); diff = A - B" in " ".join(table.stdout.split())
    assert f"comparing {model} (A) with {model} [pooling=cls] (B)" in table.stderr
    # B's pooling=cls is the model's own: A (by default) and B are one configuration, said once the records say so
    same = runner.invoke(app, ["compare", "-m", model, "-m", model, *STSB_DEV, "--set-b", "pooling=cls", "-q"])
    assert isinstance(same.exception, EmbenchError) and "resolve to the same weights and settings" in str(same.exception)


@pytest.mark.slow
def test_python_compares_two_loaded_encoders_or_one_name_with_options_per_side(env, tiny_bert_dir, one_thread):
    from embench import load_model

    model = str(tiny_bert_dir)
    cls, mean = _run_score(model, "cls"), _run_score(model, "mean")
    kw = {"tasks": ["STSBenchmark"], "stsb_split": "dev", "resamples": 100, "progress": False,
          "results_dir": env / "results"}
    loaded = embench.compare(load_model(model, pooling="mean"), load_model(model, pooling="cls"), **kw)
    named = embench.compare(model, model, options_a={"pooling": "mean"}, options_b={"pooling": "cls"}, **kw)
    shared = embench.compare(model, model, pooling="mean", options_b={"pooling": "cls"}, **kw)  # B's own wins
    for c in (loaded, named, shared):
        assert (c.frame.loc["STS-B", "A"], c.frame.loc["STS-B", "B"]) == (mean, cls)
        assert (c.model_a, c.model_b) == (f"{model} (pooling=mean)", f"{model} (pooling=cls)")
    assert named.frame.equals(loaded.frame)
    assert len(list((env / "results").rglob("STSBenchmark-*.json"))) == 2  # run's records, found again
    with pytest.raises(EmbenchError, match=r"^model_a, model_b: both sides are .* with the same settings, .* e\.g\. "
                                           r"options_b=\{'pooling': 'cls'\}"):
        embench.compare(model, model, options_b={"pooling": None}, **kw)


@pytest.mark.slow
def test_a_seed_group_side_takes_a_setting_of_its_own(tmp_path, env, tiny_model, tiny_bert_dir, one_thread):
    from transformers import BertConfig, BertModel

    from embench.evaluation.seed_groups import write_seed_group

    def variant(seed: int):
        def make(vocab: int) -> BertModel:
            import torch

            model = BertModel(BertConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                         intermediate_size=64, max_position_embeddings=512))
            torch.manual_seed(seed)
            for w in model.parameters():
                w.data += 0.02 * torch.randn_like(w)
            return model
        return tiny_model(f"tiny-bert-side-seed-{seed}", make)

    group = tmp_path / "tiny-group"
    group.mkdir()
    write_seed_group(group, {1: variant(1), 2: variant(2)}, {"recipe": "test"})
    r = runner.invoke(app, ["compare", "-m", str(group), "-m", str(group), "--set-b", "pooling=mean", *STSB_DEV,
                            "--resamples", "100", "-q", "-f", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert (out["model_a"], out["model_b"]) == ("tiny-group (pooling=cls)", "tiny-group (pooling=mean)")
    row = {row["task"]: row for row in out["rows"]}["STS-B"]
    assert row["A seeds"] == row["B seeds"] == 2 and row["diff"] == pytest.approx(row["A"] - row["B"])
