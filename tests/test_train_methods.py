"""The trainer's shape: a method defined in a test file, accumulation = one big batch, checkpoint
series, recipes, LoRA, bf16 weights, gradient checkpointing, evaluation callbacks."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from typer.testing import CliRunner

from embench.cli import app
from embench.core.errors import EmbenchError
from embench.train import METHODS, Batch, Method, Trainer, make_config, train
from embench.train.distributed import DistInfo

pytestmark = pytest.mark.usefixtures("one_thread")


# -- a whole method in 30 lines, registered here, trained through the Trainer and the CLI ---------
@dataclass
class MarginOptions:
    margin: float = 0.5


class TripletMargin(Method):
    """Triplet margin loss on (sentence, the same sentence, a random other sentence)."""

    description = "toy: triplet margin on cosine distances"
    data_kind = "sentences"
    Options = MarginOptions
    defaults = {"pooling": "mean", "lr": 1e-3, "batch_size": 8, "max_length": 24}

    def batch(self, examples, indices, rng: random.Random) -> Batch:
        texts = [examples[i] for i in indices]
        others = [examples[rng.randrange(len(examples))] for _ in indices]
        return Batch({"anchor": texts, "positive": list(texts), "negative": others})

    def objective(self, outputs, batch, dist: DistInfo):
        r = outputs.reps
        d_pos = 1 - F.cosine_similarity(r["anchor"], r["positive"])
        d_neg = 1 - F.cosine_similarity(r["anchor"], r["negative"])
        loss = F.relu(d_pos - d_neg + self.options.margin).mean()
        return loss, {"active": float((d_pos - d_neg + self.options.margin > 0).float().mean())}


METHODS.add("triplet-margin", TripletMargin)


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_a_method_defined_in_a_test_trains_through_the_trainer_and_the_cli(tiny_bert_dir, wiki_corpus, data_root, tmp_path):
    import embench

    r = train(make_config(method="triplet-margin", model=str(tiny_bert_dir), data=[str(wiki_corpus)], data_root=str(data_root),
                          out=str(tmp_path / "api"), max_steps=4, eval_steps=0, log_steps=1, progress=False, margin=0.3))
    logged = [h for h in r.history if "loss" in h]
    assert len(logged) == 4 and all("active" in h for h in logged)
    assert json.loads((tmp_path / "api/train_config.json").read_text())["method_options"] == {"margin": 0.3}
    assert embench.load_model(r.best_dir).encode_batch(["a test"]).shape == (1, 32)
    res = CliRunner().invoke(app, ["train", "--method", "triplet-margin", "--model", str(tiny_bert_dir), "--train-data", str(wiki_corpus),
                                   "--data", str(data_root), "--out", str(tmp_path / "cli"), "--max-steps", "2",
                                   "--eval-steps", "0", "--set", "margin=0.2", "--quiet"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "cli/best/modules.json").is_file()
    bad = CliRunner().invoke(app, ["train", "--method", "triplet-margin", "--set", "margn=1", "--show"])
    assert isinstance(bad.exception, EmbenchError) and "Did you mean 'margin'" in str(bad.exception)


# -- accumulation, gradient checkpointing and precision --------------------------------------------
def _first_update(make, out, **kw):
    """The weights after one step of unsupervised SimCSE (fp32, dropout off) and the step's loss."""
    trainer = make(out, **kw)
    loss, _, _ = trainer.step(0)
    return {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}, loss, trainer


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_four_micro_batches_of_8_give_the_update_of_one_batch_of_32(simcse_trainer, tmp_path):
    whole, loss, one = _first_update(simcse_trainer, tmp_path / "a")
    accumulated, loss4, four = _first_update(simcse_trainer, tmp_path / "b", grad_accumulation=4)
    assert loss4 == pytest.approx(loss, rel=1e-5)
    # the gradients themselves: AdamW's first update is about lr x sign(gradient), blind to a wrong scale
    grads = [{n: p.grad for n, p in t.model.named_parameters() if p.requires_grad} for t in (one, four)]
    for name, g in grads[0].items():
        torch.testing.assert_close(grads[1][name], g, rtol=1e-4, atol=1e-7, msg=lambda m, name=name: f"{name}: {m}")
    # and the weights: within 1 % of the step (lr 1e-3); float32 sums in another order move a weight whose
    # gradient is near AdamW's eps by a few 1e-7 (1.04e-6 seen on torch 2.11)
    worst = max(float((whole[k] - accumulated[k]).abs().max()) for k in whole)
    assert worst < 1e-5, worst


def test_gradient_checkpointing_changes_memory_not_the_update(simcse_trainer, tmp_path):
    plain, loss, _ = _first_update(simcse_trainer, tmp_path / "a")
    ckpt, loss_ckpt, trainer = _first_update(simcse_trainer, tmp_path / "b", gradient_checkpointing=True)
    enc = trainer.model.encoder
    assert getattr(enc, "is_activation_checkpointing", None) or enc.is_gradient_checkpointing
    assert loss_ckpt == pytest.approx(loss, rel=1e-6)
    assert max(float((plain[k] - ckpt[k]).abs().max()) for k in plain) < 1e-6


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_bf16_precision_keeps_the_weights_in_bf16(simcse_trainer, tmp_path):
    _, loss, _ = _first_update(simcse_trainer, tmp_path / "a", mlp="train")
    _, bf16_loss, t = _first_update(simcse_trainer, tmp_path / "b", mlp="train", precision="bf16")
    assert {p.dtype for p in t.model.parameters()} == {torch.bfloat16}  # SimCSE's MLP head too
    assert bf16_loss == pytest.approx(loss, abs=0.05)  # the same objective, in bf16


# -- checkpoint series and resume -------------------------------------------------------------------
def _series_config(tiny_bert_dir, data_root, out, **kw):
    return make_config(method="crop", model=str(tiny_bert_dir), data=["20newsgroups"], data_root=str(data_root), out=str(out),
                       batch_size=8, max_length=32, max_examples=200, lr=1e-3, log_steps=1, eval_steps=0, progress=False,
                       max_steps=6, save_every=2, save_steps=1, **kw)


@pytest.mark.slow
def test_a_checkpoint_series_resumes_exactly(tiny_bert_dir, data_root, tmp_path, monkeypatch):
    full = train(_series_config(tiny_bert_dir, data_root, tmp_path / "full"))
    assert [p.name for p in full.series] == ["step-000002", "step-000004", "step-000006"]
    from embench.train.methods.crop import Crop

    real, calls = Crop.loss, {"n": 0}

    def interrupted(self, *a):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return real(self, *a)

    monkeypatch.setattr(Crop, "loss", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(_series_config(tiny_bert_dir, data_root, tmp_path / "cut"))
    monkeypatch.setattr(Crop, "loss", real)
    assert sorted(p.name for p in (tmp_path / "cut/checkpoints").iterdir()) == ["step-000002"]
    resumed = train(_series_config(tiny_bert_dir, data_root, tmp_path / "cut", resume=True))
    assert [p.name for p in resumed.series] == ["step-000002", "step-000004", "step-000006"]
    for a, b in zip(full.series, resumed.series, strict=True):
        x, y = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
        assert max(float((x[k] - y[k]).abs().max()) for k in x) < 1e-6, a.name
    import embench.analysis

    traj = embench.analysis.run("alignment-uniformity", [tmp_path / "cut/checkpoints"], tmp_path / "au", data=data_root,
                                use_cache=False)
    assert len(traj.tables[next(iter(traj.tables))]) >= 3  # the series is a trajectory for SimCSE's Fig. 2


# -- recipes ----------------------------------------------------------------------------------------
@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_recipes_show_the_papers_numbers():
    import yaml

    res = CliRunner().invoke(app, ["train", "--recipe", "simcse-sup", "--show"])
    assert res.exit_code == 0, res.output
    shown = yaml.safe_load(res.output)
    assert (shown["batch_size"], shown["lr"], shown["epochs"], shown["warmup_ratio"], shown["max_length"]) == (512, 5e-5, 3, 0.0, 32)
    # STS-B dev every 125 steps: the script's (run_sup_example.sh --eval_steps 125; the paper's App. A says 250)
    assert (shown["eval_steps"], shown["eval_tasks"], shown["pooling"], shown["method_options"]["mlp"]) == (125, ["STSBenchmark-dev"], "cls", "keep")
    assert "Table A.1" in res.output and "GLOBAL" in res.output
    crop = yaml.safe_load(CliRunner().invoke(app, ["train", "--recipe", "crop", "--show", "--lr", "1e-4"]).output)
    assert (crop["optimizer"], crop["batch_size"], crop["max_length"], crop["pooling"]) == ("adam", 64, 512, "mean")
    assert (crop["warmup_ratio"], crop["warmup_of"], crop["epochs"], crop["lr"]) == (0.1, "epoch", 1, 1e-4)  # the CLI wins
    assert crop["grad_clip"] == 0.0  # the authors' training loop clips no gradient (issue 31, item 4)
    assert crop["precision"] == "fp32"  # nor autocasts
    scratch = yaml.safe_load(CliRunner().invoke(app, ["train", "-r", "crop-scratch", "--show"]).output)
    assert (scratch["epochs"], scratch["from_scratch"]) == (10, True)
    typo = CliRunner().invoke(app, ["train", "--recipe", "simcse-usnup", "--show"])
    assert isinstance(typo.exception, EmbenchError) and "Did you mean 'simcse-unsup'" in str(typo.exception)


def test_crop_warm_up_is_ten_percent_of_one_epoch_whatever_the_epochs(tiny_bert_dir, data_root, tmp_path):
    cfg = make_config(recipe="crop-scratch", model=str(tiny_bert_dir), data_root=str(data_root), out=str(tmp_path),
                      max_examples=200, batch_size=8, max_length=32, progress=False)
    t = Trainer(cfg)
    t.setup()
    assert t.per_epoch == -(-len(t.examples) // 8) and t.total == 10 * t.per_epoch  # the last, smaller batch counted
    assert t.warmup == int(0.1 * t.per_epoch)
    assert isinstance(t.optimizer, torch.optim.Adam) and not isinstance(t.optimizer, torch.optim.AdamW)


# -- parameter-efficient training and evaluation callbacks ------------------------------------------
@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_lora_trains_only_the_adapters_and_exports_a_merged_model(tiny_bert_dir, wiki_corpus, data_root, tmp_path):
    import embench

    cfg = make_config(method="unsup-simcse", model=str(tiny_bert_dir), data=[str(wiki_corpus)], data_root=str(data_root),
                      out=str(tmp_path / "lora"), max_steps=3, eval_steps=0, progress=False, pooling="mean", mlp="none",
                      lr=1e-2, max_length=24, batch_size=16, lora_r=4, lora_alpha=8, lora_dropout=0.0)
    t = Trainer(cfg)
    result = t.fit()
    trained = {n for n, p in t.model.named_parameters() if p.requires_grad}
    assert trained and all("lora_" in n for n in trained)
    before, after = load_file(tiny_bert_dir / "model.safetensors"), load_file(result.best_dir / "model.safetensors")
    assert set(after) == set(before)  # merged: a plain BERT, no adapter keys
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert embench.load_model(result.best_dir).encode_batch(["x"]).shape == (1, 32)


@pytest.mark.slow
def test_evaluation_callbacks_score_tasks_and_analyses_and_select_on_one(tiny_bert_dir, wiki_corpus, data_root, tmp_path):
    cfg = make_config(method="unsup-simcse", model=str(tiny_bert_dir), data=[str(wiki_corpus)], data_root=str(data_root),
                      out=str(tmp_path / "ev"), max_steps=2, eval_steps=2, progress=False, pooling="mean", lr=1e-3,
                      max_length=24, batch_size=16, eval_tasks=["STSBenchmark-dev"],
                      eval_analyses=["knn:datasets=twentynewsgroups,limit=300,k=5"], select_on="knn:datasets=twentynewsgroups,limit=300,k=5")
    r = train(cfg)
    evals = [h for h in r.history if "best" in h]
    assert [e["step"] for e in evals] == [0, 2]
    key = "eval/knn:datasets=twentynewsgroups,limit=300,k=5"
    assert all(0 <= e[key] <= 1 and -1 <= e["eval/STSBenchmark-dev"] <= 1 for e in evals)
    assert r.best_score == max(e[key] for e in evals)
    assert (tmp_path / "ev/evals/step-000002/knn/knn.csv").is_file()
    with pytest.raises(EmbenchError, match="unknown analysis 'knnn'"):
        Trainer(make_config(method="crop", eval_steps=5, eval_analyses=["knnn:x"], data_root=str(data_root))).setup()
