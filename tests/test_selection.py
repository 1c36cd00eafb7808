"""Model selection by a declared direction (a lower alignment is better, a higher Spearman), and methods that
know the step: what a training run may select on says which way it improves, and a schedule inside a method
needs no trainer edit."""

from __future__ import annotations

import json
import random
import re
import sys

import pytest

from embench.core.directions import HIGHER, LOWER, improves
from embench.core.errors import EmbenchError
from embench.train import METHODS, Batch, Method, make_config, train
from embench.train.callbacks import Evaluator
from embench.train.losses import info_nce
from embench.train.selection import choose

pytestmark = pytest.mark.usefixtures("one_thread")


def test_a_better_score_is_strictly_higher_or_strictly_lower_as_declared():
    assert improves(0.3, None, LOWER) and improves(0.3, None, HIGHER)  # nothing kept yet
    assert improves(0.3, 0.5, LOWER) and not improves(0.5, 0.3, LOWER)
    assert improves(0.5, 0.3, HIGHER) and not improves(0.3, 0.5, HIGHER)
    assert not improves(0.4, 0.4, LOWER) and not improves(0.4, 0.4, HIGHER)  # a tie keeps the earlier step


def test_an_analysis_declares_a_direction_per_score_and_a_wrong_one_is_refused():
    from embench.analysis.base import analysis
    from embench.analysis.registry import get

    assert get("alignment-uniformity").scores == {"alignment": LOWER, "uniformity": LOWER}
    assert get("knn").scores == {"accuracy": HIGHER}
    with pytest.raises(EmbenchError, match="analysis 'toy', score 'loss': a score's direction is 'higher' or 'lower'"):
        analysis("toy", scores={"loss": "down"})


def test_every_selectable_metric_has_a_direction_and_an_undeclared_one_cannot_select(data_root, tmp_path):
    from embench.data.root import DataRoot

    ev = Evaluator(["STSBenchmark-dev"], ["alignment-uniformity:split=dev", "knn:twentynewsgroups", "token-dependency"],
                   DataRoot.resolve(str(data_root)), tmp_path, batch_size=8, max_length=None, dtype="fp32")
    assert ev.directions == {
        "STSBenchmark-dev": HIGHER,
        "alignment-uniformity:split=dev": LOWER,  # the first declared score is the analysis' own key
        "alignment-uniformity:split=dev/alignment": LOWER, "alignment-uniformity:split=dev/uniformity": LOWER,
        "knn:twentynewsgroups": HIGHER, "knn:twentynewsgroups/accuracy": HIGHER,
    }
    assert choose(None, ev.metrics, ev.directions).describe() == "STSBenchmark-dev (higher is better)"
    assert choose("alignment-uniformity:split=dev/uniformity", ev.metrics, ev.directions).direction == LOWER
    with pytest.raises(EmbenchError, match="--select-on 'token-dependency': the analysis 'token-dependency' declares no "
                                           "direction for it"):
        choose("token-dependency", ev.metrics, ev.directions)
    with pytest.raises(EmbenchError, match=r"--select-on 'STSB': no such metric; the metrics that can pick a checkpoint: "
                                           r"STSBenchmark-dev \(higher\), alignment-uniformity:split=dev \(lower\)"):
        choose("STSB", ev.metrics, ev.directions)


def _run(tiny_bert_dir, data_root, out, **kw):
    return train(make_config(method="unsup-simcse", model=str(tiny_bert_dir), data=["corpora"], data_root=str(data_root),
                             out=str(out), batch_size=8, max_length=24, max_examples=32, progress=False, log_steps=1,
                             pooling="mean", **kw))


@pytest.mark.slow  # over a second (the fast tier stays under a minute)
def test_a_lower_is_better_selection_keeps_the_minimum(tiny_bert_dir, data_root, tmp_path, caplog, monkeypatch):
    """Scripted alignments: the maximum (step 1) would be kept under "higher is better"; the minimum (step 2) is."""
    scripted = {0: 0.10, 1: 0.50, 2: 0.30, 3: 0.40}
    monkeypatch.setattr(Evaluator, "__call__", lambda self, model, step: {"alignment-uniformity": scripted[step]})
    with caplog.at_level("WARNING"):
        r = _run(tiny_bert_dir, data_root, tmp_path / "a", max_steps=3, eval_steps=1, eval_analyses=["alignment-uniformity"])
    assert (r.initial_score, r.best_step, r.best_score) == (0.10, 2, 0.30)
    kept = json.loads((r.best_dir / "embench_training.json").read_text())
    assert kept["step"] == 2 and kept["selected_on"] == "alignment-uniformity (lower is better)"
    assert "scored above (lower is better) the untrained model (step 0: 0.1000)" in caplog.text
    assert [h["best"] for h in r.history if "best" in h] == [False, True, True, False]


@pytest.mark.slow
def test_selecting_on_the_real_alignment_keeps_the_step_of_the_lowest(tiny_bert_dir, data_root, tmp_path):
    """Alignment (Wang and Isola 2020) of STS-B dev at every step; the kept checkpoint, loaded again, has the lowest."""
    from embench.analysis import run

    key = "alignment-uniformity:split=dev"
    r = _run(tiny_bert_dir, data_root, tmp_path / "run", max_steps=3, eval_steps=1, eval_analyses=[key], lr=1e-3)
    trained = {h["step"]: h[f"eval/{key}"] for h in r.history if "best" in h and h["step"] > 0}
    assert len(set(trained.values())) == 3  # distinct numbers: a max and a min that differ
    assert r.best_score == min(trained.values()) and r.best_step == min(trained, key=trained.get)
    again = run("alignment-uniformity", [str(r.best_dir)], tmp_path / "again", data=str(data_root), use_cache=False,
                split="dev")
    assert float(again.tables["alignment_uniformity"]["alignment"].iloc[0]) == pytest.approx(r.best_score, rel=1e-5)


# -- a method told the step: an annealed temperature --------------------------------------------------------
class AnnealedTemperature(Method):
    """toy: InfoNCE of two dropout views, tau from 0.1 down by 0.08 over the run"""

    defaults = {"pooling": "mean", "lr": 1e-3, "batch_size": 8, "max_length": 24}

    def batch(self, examples, indices, rng: random.Random) -> Batch:
        texts = [examples[i] for i in indices]
        return Batch({"anchor": texts, "positive": list(texts)})

    def objective(self, outputs, batch, dist):
        tau = 0.1 - 0.08 * self.progress
        loss = info_nce(outputs.reps["anchor"], outputs.reps["positive"], tau)
        return loss, {"temperature": tau, "seen_step": self.step, "seen_total": self.total_steps}


METHODS.add("test-annealed-temperature", AnnealedTemperature)


@pytest.mark.parametrize("accumulation", [1, 2])
@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_a_method_is_told_the_step_and_the_runs_total(tiny_bert_dir, data_root, tmp_path, accumulation):
    """32 examples, batches of 8, one epoch: 4 steps, a number the trainer resolves; tau = 0.1 - 0.08 * step / 4."""
    r = train(make_config(method="test-annealed-temperature", model=str(tiny_bert_dir), data=["corpora"],
                          data_root=str(data_root), out=str(tmp_path / "run"), max_examples=32, epochs=1, eval_steps=0,
                          log_steps=1, progress=False, grad_accumulation=accumulation))
    logged = [h for h in r.history if "loss" in h]
    assert [h["seen_step"] for h in logged] == [0, 1, 2, 3] and {h["seen_total"] for h in logged} == {4}
    assert [h["temperature"] for h in logged] == pytest.approx([0.1, 0.08, 0.06, 0.04])


@pytest.mark.slow
def test_the_cli_says_an_analysis_number_as_it_is_and_a_task_score_x100(tiny_bert_dir, data_root, tmp_path, capsys, monkeypatch):
    """An alignment of 0.0004 was printed 'best 0.04', as if it were a correlation x100."""
    from embench.cli import main

    key = "alignment-uniformity:split=dev"
    common = ["train", "--method", "unsup-simcse", "-m", str(tiny_bert_dir), "--train-data", "corpora", "--data", str(data_root),
              "--max-steps", "2", "--eval-steps", "1", "--batch-size", "8", "--max-length", "24", "--set", "max_examples=32",
              "--set", "log_steps=1", "-q"]
    for extra, out, pattern in (
            (["--eval-analysis", key, "--select-on", f"{key}/alignment"], "a", rf"best\s+\d\.\d+(e-\d+)? \({re.escape(key)}/alignment\) at step \d"),
            ([], "t", r"best\s+-?\d+\.\d\d at step \d \(before training -?\d+\.\d\d\)")):
        monkeypatch.setattr(sys, "argv", ["embench", *common, *extra, "--out", str(tmp_path / out)])
        with pytest.raises(SystemExit) as done:
            main()
        assert done.value.code in (0, None)
        kept = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("kept:"))
        assert re.search(pattern, kept), kept
