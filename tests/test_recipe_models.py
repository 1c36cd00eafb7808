"""Issue 36, item 6: a recipe made for one model trains that model unless --model says otherwise, and says so
when it cannot be had here; a recipe with no single model needs --model. ``--show`` with ``--seeds`` lists
every seed's run and folder."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from embench.cli.app import app
from embench.core.errors import EmbenchError
from embench.train import make_config, train
from embench.train.recipes import RECIPES


def test_recipes_made_for_one_model_default_to_the_papers_model():
    assert make_config(recipe="simcse-sup").model == "bert-base-uncased"
    assert make_config(recipe="simcse-unsup").model == "bert-base-uncased"
    assert make_config(recipe="multicsr").model == "bert-base-uncased"
    assert make_config(recipe="simcse-sup", model="all-MiniLM-L6-v2").model == "all-MiniLM-L6-v2"  # --model wins
    assert make_config(method="unsup-simcse").model == "all-MiniLM-L6-v2"  # no recipe: embench's default


def test_no_recipe_falls_back_to_embench_s_default_model_in_silence():
    for name in RECIPES.names():
        recipe = RECIPES.get(name)
        model = make_config(recipe=name).model
        assert model != "all-MiniLM-L6-v2", name
        assert model == recipe.model and (model is not None or "model" in recipe.requires), name


def test_show_names_the_recipe_s_model_and_what_needs_one():
    shown = CliRunner().invoke(app, ["train", "--recipe", "simcse-sup", "--show"])
    assert shown.exit_code == 0, shown.output
    assert "# model: bert-base-uncased, the paper's (this recipe's default); --model trains another" in shown.output
    crop = CliRunner().invoke(app, ["train", "--recipe", "crop", "--show"])
    assert "# needs --model to run" in crop.output


def test_a_recipe_that_needs_a_model_stops_before_loading_anything(data_root, tmp_path):
    with pytest.raises(EmbenchError, match="recipe='crop' needs model"):
        train(make_config(recipe="crop", data_root=str(data_root), out=str(tmp_path / "run"), progress=False))
    assert not (tmp_path / "run").exists()


def test_the_papers_model_missing_here_is_a_clear_error_naming_model(data_root, tmp_path, monkeypatch):
    monkeypatch.setenv("EMBENCH_MODELS", str(tmp_path / "no-models"))
    with pytest.raises(EmbenchError) as e:
        train(make_config(recipe="simcse-sup", data_root=str(data_root), out=str(tmp_path / "run"), max_steps=1,
                          eval_steps=0, progress=False))
    msg = str(e.value)
    assert msg.startswith("could not load model 'bert-base-uncased'. Tried:\n  - ")  # as embench run says it
    assert "bert-base-uncased is the model recipe='simcse-sup' trains by default (the paper's)" in msg  # train's keywords
    assert "give model=NAME (a folder, e.g. all-MiniLM-L6-v2 offline)" in msg
    with pytest.raises(EmbenchError) as e:  # a decoder recipe's hint names a decoder, not an encoder it would refuse
        train(make_config(recipe="bellm", data_root=str(data_root), out=str(tmp_path / "bellm"), max_steps=1,
                          eval_steps=0, progress=False))
    assert "give model=NAME (a decoder LLM: a folder or a .gguf file, e.g. SmolLM2-135M-Instruct offline)" in str(e.value)


def test_show_with_seeds_lists_each_seed_and_its_folder(tmp_path):
    out = tmp_path / "simcse"
    res = CliRunner().invoke(app, ["train", "--recipe", "simcse-unsup", "-m", "all-MiniLM-L6-v2", "--train-data", "corpora",
                                   "--seeds", "1-3", "--out", str(out), "--show"])
    assert res.exit_code == 0, res.output
    assert "# seeds: 1, 2, 3 (--seeds 1-3)" in res.output
    for s in (1, 2, 3):
        assert f"#   seed {s}: {out / f'seed-{s}'}" in res.output
    assert f"`embench run -m {out}`" in res.output
    assert not out.exists()  # --show trains nothing
    both = CliRunner().invoke(app, ["train", "--recipe", "simcse-unsup", "--seeds", "1-3", "--seed", "4", "--show"])
    assert isinstance(both.exception, EmbenchError) and "not both" in str(both.exception)
