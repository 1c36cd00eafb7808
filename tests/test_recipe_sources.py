"""Issue 31: every recipe cites, per option, the paper section, table or script line its value follows, and
``embench train --recipe X --show`` prints that source beside the value (YAML comments: the output still
loads to the resolved configuration); an option given here says so, with the recipe's value it replaced."""

from __future__ import annotations

import dataclasses

import pytest
import yaml
from typer.testing import CliRunner

from embench.cli import app
from embench.core.errors import EmbenchError
from embench.train import METHODS, make_config, resolve
from embench.train.config import FIELDS
from embench.train.recipes import RECIPES, Recipe

BUILT_IN = [n for n in RECIPES.names() if RECIPES.plugin(n) is None]


def _show(*args: str) -> str:
    res = CliRunner().invoke(app, ["train", *args, "--show"])
    assert res.exit_code == 0, res.output
    return res.output


def _line(shown: str, option: str, nested: bool = False) -> str:
    """The line of ``option`` (a method's own under method_options: indented)."""
    head = ("  " if nested else "") + option + ":"
    hits = [line for line in shown.splitlines() if line.startswith(head)]
    assert len(hits) == 1, (option, hits)
    return hits[0]


def _method_fields(recipe: Recipe) -> set[str]:
    return {f.name for f in dataclasses.fields(METHODS.get(recipe.values["method"]).Options)}


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_option_a_recipe_sets_has_a_source_and_every_source_an_option(name):
    recipe = RECIPES.get(name)
    assert set(recipe.sources) == set(recipe.values), name
    assert all(isinstance(s, str) and s.strip() and "\n" not in s for s in recipe.sources.values()), name
    known = set(FIELDS) | _method_fields(recipe)
    assert set(recipe.sources) <= known, sorted(set(recipe.sources) - known)  # a real option each


def test_a_recipe_whose_sources_miss_or_invent_an_option_is_refused():
    with pytest.raises(EmbenchError, match=r"recipe r: no source for epochs; a source for batch_size, which it does not set"):
        Recipe("r", "d", "c", {"lr": 1e-3, "epochs": 1}, sources={"lr": "Table 1", "batch_size": "Table 1"})
    with pytest.raises(EmbenchError, match="an empty source for lr"):
        Recipe("r", "d", "c", {"lr": 1e-3}, sources={"lr": " "})
    with pytest.raises(EmbenchError, match="an empty source for lr"):  # None was taken, as str(None) is "None"
        Recipe.cited("r", "d", "c", {"lr": (1e-3, None)})
    assert Recipe("r", "d", "c", {"lr": 1e-3}).source("lr") == "recipe r"  # a plug-in's recipe may cite one paragraph


@pytest.mark.parametrize("name", BUILT_IN)
def test_show_notes_each_recipe_option_with_its_source_and_still_loads_to_the_resolved_config(name):
    shown = _show("--recipe", name)
    assert yaml.safe_load(shown) == resolve(make_config(recipe=name)).to_dict()
    recipe = RECIPES.get(name)
    nested = _method_fields(recipe)
    for option, source in recipe.sources.items():
        assert _line(shown, option, option in nested).endswith("  # " + source), option
    assert _line(shown, "log_steps") == "log_steps: 10"  # neither the recipe's nor given: a plain default
    assert shown.startswith(f"# recipe {recipe.name}: ") and f"# follows: {recipe.cites}\n" in shown


def test_an_option_given_here_says_so_with_the_recipe_value_and_source_it_replaces(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("method_options:\n  crop_sentences: 3\nlog_steps: 5\n")
    shown = _show("--recipe", "crop", "--config", str(config), "--lr", "1e-4", "--set", "temperature=0.1",
                  "--out", str(tmp_path / "run"))
    crop = RECIPES.get("crop")
    assert _line(shown, "lr") == f"lr: 0.0001  # set here (the recipe: 2e-05, {crop.sources['lr']})"
    assert _line(shown, "temperature", True).endswith(f"# set here (the recipe: 0.05, {crop.sources['temperature']})")
    assert _line(shown, "crop_sentences", True).startswith("  crop_sentences: 3  # set here (the recipe: 2, ")
    assert _line(shown, "log_steps") == "log_steps: 5  # set here"  # given, not the recipe's: no recipe value
    assert _line(shown, "out").endswith("  # set here") and _line(shown, "recipe") == "recipe: crop"
    assert _line(shown, "batch_size") == f"batch_size: 64  # {crop.sources['batch_size']}"  # the recipe's, kept
    want = resolve(make_config(config, recipe="crop", lr=1e-4, temperature=0.1, out=str(tmp_path / "run"))).to_dict()
    assert yaml.safe_load(shown) == want


def test_values_yaml_must_quote_or_break_still_load_with_their_notes():
    prompt = 'say: "#1" {text}\nthen # more: it\'s'  # a newline, a colon, hashes and both quotes
    shown = _show("--recipe", "bellm", "--set", f"prompt={prompt}", "--train-data", "a b.csv", "--train-data", "c",
                  "--set", 'model_config={"num_hidden_layers": 2}')
    loaded = yaml.safe_load(shown)
    assert loaded["prompt"] == prompt and loaded["data"] == ["a b.csv", "c"]
    assert loaded == resolve(make_config(recipe="bellm", prompt=prompt, data=["a b.csv", "c"],
                                         model_config={"num_hidden_layers": 2})).to_dict()
    assert "model_config:  # set here" in shown and "data:  # set here (the recipe: [\"snli\"], " in shown


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_each_family_cites_the_paper_or_script_its_numbers_come_from():
    unsup = _show("--recipe", "simcse-unsup")
    assert "Table A.1" in _line(unsup, "lr") and "run_unsup_example.sh --learning_rate 3e-5" in _line(unsup, "lr")
    assert "Table D.1" in _line(unsup, "temperature", True)
    sup = _show("--recipe", "simcse-sup")
    assert "4 GPUs x --per_device_train_batch_size 128" in _line(sup, "batch_size")
    assert "Table 7: alpha = 1" in _line(sup, "hard_negative_weight", True)
    bellm = _show("--recipe", "bellm")
    assert "README (4AI/BeLLM at ade3ce0, 2024-04-26) --learning_rate 5e-4" in _line(bellm, "lr")
    assert "--set lr=2e-4" in _line(bellm, "lr")
    assert "fp16 = False" in _line(bellm, "precision") and "--precision fp16-mixed" in _line(bellm, "precision")
    assert "--eval_steps 125" in _line(unsup, "eval_steps") and "--fp16" in _line(unsup, "precision")
    assert "BiLLM_START_INDEX=31" in _line(bellm, "bidirectional_mode", True)
    jtcse = _show("--recipe", "jtcse-bert")
    assert "train_jtcse_bert.py: no scheduler" in _line(jtcse, "lr_schedule")
    assert "train_jtcse_bert.py --lr 1.3e-6" in _line(jtcse, "lr")
    assert "train_jtcse_roberta.py --batch_size_train 256" in _line(_show("--recipe", "jtcse-roberta"), "batch_size")
    crop = _show("--recipe", "crop")
    assert "model_stuff.py" in _line(crop, "warmup_of") and "§3.1" in _line(crop, "optimizer")
    assert "§3.4" in _line(_show("--recipe", "crop-scratch"), "epochs")
    multicsr = _show("--recipe", "multicsr")
    assert "-t 25" in _line(multicsr, "eval_steps") and "MultiCSR §4.1" in _line(multicsr, "sigma", True)
    code = _show("--recipe", "multicsr-code")
    assert "cl_masked_forward" in _line(code, "fn_loss", True)
    assert "-b 128 on one GPU" in _line(code, "batch_size") and "-p 0.95" in _line(code, "sigma", True)
    assert "no autocast" in _line(crop, "precision") and "no autocast" in _line(jtcse, "precision")
