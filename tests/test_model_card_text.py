"""The model card's numbers and names: an analysis' number as the log prints it, no path of the training machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from embench.data.root import file_sha256
from embench.train.model_card import write_model_card
from embench.train.score_text import score_text

ANALYSIS = "alignment-uniformity:split=dev"


def _card(folder: Path, final: Path, meta: dict, st_modules=("Transformer", "Pooling")) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = write_model_card(folder, final=final, meta=meta, pooling="cls", max_length=32, st_modules=list(st_modules),
                            why_not_st=None, prompt_prefix=None)
    return path.read_text()


def test_an_analysis_number_is_shown_as_the_log_shows_it_not_x100(tmp_path):
    """``--select-on alignment-uniformity:split=dev/alignment``: alignment 5.12e-06 printed as 0.00 (every metric x100);
    the training log (``kept: ... 5.122e-06``) shows it as it is, and a task's score x100, as the card does now."""
    scores = {"STSBenchmark-dev": 0.45083, ANALYSIS: 5.122e-06, f"{ANALYSIS}/alignment": 5.122e-06,
              f"{ANALYSIS}/uniformity": -3.433e-05}
    meta = {"method": "unsup-simcse", "base_model": "bert-base-uncased", "step": 4, "scores": scores,
            "selected_on": f"{ANALYSIS}/alignment (lower is better)",
            "config": {"eval_tasks": ["STSBenchmark-dev"], "eval_analyses": [ANALYSIS]}}
    card = _card(tmp_path / "best", tmp_path / "best", meta)
    assert "| STSBenchmark-dev | 45.08 |" in card
    assert f"| {ANALYSIS}/alignment | 5.122e-06 |" in card and f"| {ANALYSIS}/uniformity | -3.433e-05 |" in card
    assert f"| {ANALYSIS} | {score_text(5.122e-06, analysis=True)} |" in card  # what `embench train` prints
    assert "0.00 |" not in card


def test_the_card_names_a_local_model_and_data_by_their_own_names(tmp_path):
    """Given absolute paths, the card said ``from <absolute folder>/tiny-bert``, ``SentenceTransformer("<absolute
    folder>/best")`` and the data file's path: the card travels with the folder, where those paths name nothing."""
    model = tmp_path / "models" / "tiny-bert"
    model.mkdir(parents=True)
    data = tmp_path / "data" / "wiki.txt"
    data.parent.mkdir()
    data.write_text("a sentence\n")
    config = {"model": str(model), "data": [str(data)], "batch_size": 16, "method_options": {"temperature": 0.05}}
    meta = {"method": "unsup-simcse", "recipe": "simcse-unsup", "base_model": str(model), "data": [str(data)],
            "step": 2, "config": config}
    card = _card(tmp_path / "runs" / "sel" / "best.tmp", tmp_path / "runs" / "sel" / "best.tmp", meta)
    assert str(tmp_path) not in card
    assert "from `tiny-bert`." in card and "| `model` | `tiny-bert` | `bert-base-uncased` |" in card
    assert "| `data` | `['wiki.txt']` | `['corpora']` |" in card
    assert f"| `wiki.txt` | a file | `{file_sha256(data)}` |" in card  # the sha256 says which file it was
    assert 'SentenceTransformer("path/to/best")' in card and 'embench.load_model("path/to/best")' in card
    hub = _card(tmp_path / "hub", Path("runs/sel/best"), {**meta, "base_model": "bert-base-uncased",
                                                           "config": {**config, "model": "bert-base-uncased"}})
    assert "from `bert-base-uncased`." in hub and "| `model` | `bert-base-uncased` |" in hub  # a hub id as it is
    assert 'SentenceTransformer("runs/sel/best")' in hub  # a relative folder as given


def test_a_recipe_that_names_no_model_shows_a_dash_not_none(tmp_path):
    """crop's recipe table said the recipe's model was ``None``."""
    meta = {"method": "crop", "recipe": "crop", "base_model": "all-MiniLM-L6-v2", "step": 2,
            "config": {"model": "all-MiniLM-L6-v2"}}
    card = _card(tmp_path / "best", tmp_path / "best", meta)
    assert "| `model` | `all-MiniLM-L6-v2` | — |" in card and "`None`" not in card


@pytest.mark.slow  # the CLI's imports: over 0.3 s
def test_a_seed_kept_on_an_analysis_number_is_reported_as_the_card_shows_it(tmp_path, monkeypatch):
    """``--seeds`` printed every seed's kept score x100 (``seed 1: kept ... (0.00 at step 4)`` for alignment 5.1e-06)."""
    from typer.testing import CliRunner

    import embench.train.seeds
    from embench.cli import app
    from embench.train.trainer import TrainResult

    def train_seeds(cfg, seeds, on_seed=None):  # each seed "kept" at its score; nothing trains
        for s in seeds:
            on_seed(s, TrainResult(out=tmp_path, best_dir=tmp_path / f"seed-{s}" / "best", best_step=4, best_score=5.122e-06,
                                   initial_score=None, steps=4, last_loss=None, metrics=tmp_path / "metrics.jsonl"),
                    tmp_path / f"seed-{s}" / "best")
        return {s: tmp_path / f"seed-{s}" / "best" for s in seeds}

    monkeypatch.setattr(embench.train.seeds, "train_seeds", train_seeds)
    base = ["train", "--method", "unsup-simcse", "-m", "tiny-bert", "--train-data", "wiki.txt", "--eval-steps", "1",
            "--out", str(tmp_path), "--seeds", "1", "-q"]
    r = CliRunner().invoke(app, [*base, "--eval-analysis", ANALYSIS, "--select-on", f"{ANALYSIS}/alignment"])
    assert r.exit_code == 0, r.output
    assert f"seed 1: kept {tmp_path / 'seed-1' / 'best'} (5.122e-06 at step 4)" in " ".join(r.output.split())
    assert "(1 seed: 1)" in r.output  # not "1 seeds"
    task = CliRunner().invoke(app, base)  # a task's score, x100
    assert "(0.00 at step 4)" in " ".join(task.output.split())
