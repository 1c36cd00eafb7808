"""Issue 36, item 10: training says what it costs. Before the first step, the memory a step will take (with a
warning and a remedy when it will not fit); at the end, the peak memory and the size of each output folder;
and a finished seed keeps only what a user needs (its resume state, 3x the model, is removed)."""

from __future__ import annotations

import logging

import pytest
from typer.testing import CliRunner

from embench.cli.app import app
from embench.train import Trainer, make_config
from embench.train import memory_estimate as me
from embench.train.footprint import folder_bytes


def test_the_estimate_reproduces_the_measured_crop_step_on_a_cpu(minilm_path):
    """Measured (torch 2.x, CPU, fp32, attention dropout 0.1): all-MiniLM-L6-v2, forward + backward of 32 and 128
    texts of 311 tokens, the crop recipe's longest first batches: 5.0 and 17.3 GB above the loaded model."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(minilm_path)
    for texts, measured in ((32, 5.0e9), (128, 17.3e9)):
        est = me.layer_activation_bytes(config, texts, 311, attention_matrices=True, checkpointing=False)
        assert est == pytest.approx(measured, rel=0.2), texts
    fused = me.layer_activation_bytes(config, 32, 311, attention_matrices=False, checkpointing=False)
    assert fused == pytest.approx(2.17e9, rel=0.2)  # no attention dropout: the L x L matrices are not kept
    kept = me.layer_activation_bytes(config, 128, 311, attention_matrices=True, checkpointing=True)
    assert kept < 0.25 * me.layer_activation_bytes(config, 128, 311, attention_matrices=True, checkpointing=False)


def test_the_architecture_factor_by_hand():
    # 16 bits: BERT 14 h + 2 f; Llama 17 h + 4 f; Llama with LoRA dropout 26 h + 6 f. h = 10, f = 30: 200 values
    assert me.architecture_factor(10, 30, gated=False, lora_dropout=False, half=True) == 1.0
    assert me.architecture_factor(10, 30, gated=True, lora_dropout=False, half=True) == pytest.approx((170 + 120) / 200)
    assert me.architecture_factor(10, 30, gated=True, lora_dropout=True, half=True) == pytest.approx((260 + 180) / 200)
    # fp32: BERT 10 h + 2 f, with LoRA dropout 18 h + 3 f
    assert me.architecture_factor(10, 30, gated=False, lora_dropout=True, half=False) == pytest.approx((180 + 90) / 160)
    # the bellm recipe's Llama-2-7B (h 4096, f 11008): 2.2x the BERT constants in fp16
    assert me.architecture_factor(4096, 11008, gated=True, lora_dropout=True, half=True) == pytest.approx(2.17, abs=0.01)


def _saved_per_token_layer(make_model, half: bool) -> float:
    """Bytes of the distinct storages autograd saves in a forward, per token and layer: 3 layers less 1, 16 texts
    less 8 (so that the weights, and autocast's casts of frozen weights, drop out)."""
    import contextlib

    import torch

    def saved(model, texts):
        seen: dict = {}

        def pack(t):
            storage = t.untyped_storage()
            seen[storage.data_ptr(), storage.nbytes()] = storage.nbytes()
            return t

        ids = torch.randint(5, 500, (texts, 24), generator=torch.Generator().manual_seed(texts))
        autocast = torch.autocast("cpu", dtype=torch.bfloat16) if half else contextlib.nullcontext()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), autocast:
            model(input_ids=ids, attention_mask=torch.ones_like(ids))
        return sum(seen.values())

    b = {(layers, texts): saved(make_model(layers), texts) for layers in (1, 3) for texts in (8, 16)}
    return (b[3, 16] - b[1, 16] - b[3, 8] + b[1, 8]) / (2 * 8 * 24)


@pytest.mark.slow  # 8 small models built (about 3 s)
@pytest.mark.parametrize("half", [False, True])
def test_the_architecture_factor_is_what_autograd_saves_for_a_llama_layer_with_lora(half, one_thread):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import BertConfig, BertModel, LlamaConfig, LlamaModel

    torch.manual_seed(0)
    h, f = 256, 704

    def bert(layers):
        return BertModel(BertConfig(vocab_size=500, hidden_size=h, intermediate_size=f, num_hidden_layers=layers,
                                    num_attention_heads=4, attention_probs_dropout_prob=0.0), add_pooling_layer=False).train()

    def llama_lora(layers):
        model = LlamaModel(LlamaConfig(vocab_size=500, hidden_size=h, intermediate_size=f, num_hidden_layers=layers,
                                       num_attention_heads=4, num_key_value_heads=4))
        model.requires_grad_(False)
        targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
        return get_peft_model(model, LoraConfig(r=8, lora_alpha=8, lora_dropout=0.1, target_modules=targets)).train()

    measured = _saved_per_token_layer(llama_lora, half) / _saved_per_token_layer(bert, half)
    assert measured == pytest.approx(me.architecture_factor(h, f, gated=True, lora_dropout=True, half=half), rel=0.05)


def _crop(tiny_bert_dir, data_root, out, **kw):
    return make_config(method="crop", model=str(tiny_bert_dir), data=["20newsgroups"], data_root=str(data_root),
                       out=str(out), batch_size=8, max_length=64, max_examples=200, eval_steps=0, progress=False,
                       device="cpu", **kw)


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_a_step_too_large_for_the_machine_is_said_before_the_first_step_with_the_accumulation_that_fits(
        tiny_bert_dir, data_root, tmp_path, monkeypatch, caplog):
    t = Trainer(_crop(tiny_bert_dir, data_root, tmp_path / "run", max_steps=1))
    t.setup()
    monkeypatch.setattr(me, "in_use_bytes", lambda device: 100_000_000)  # the process's memory, held still
    est = me.estimate_step(t)
    assert est.texts == 16 and 0 < est.length <= 64  # 8 pairs, two crops each
    # a machine on which the step needs more than half the memory, but a quarter of the activations fit
    monkeypatch.setattr(me, "available_bytes", lambda device: int(2 * (est.now + est.state + 0.3 * est.activations)))
    lines: list[str] = []
    with caplog.at_level(logging.WARNING, logger="embench.train.memory_estimate"):
        me.say_step_memory(t, lines.append)
    assert lines and lines[0].startswith("memory: about ") and "for 16 texts a pass" in lines[0]
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "more than half of this machine's" in warned and "--grad-accumulation 4 gives the same update" in warned


@pytest.mark.slow
def test_a_run_says_its_peak_memory_and_what_its_folders_hold(tiny_bert_dir, data_root, tmp_path):
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["train", "--method", "crop", "-m", str(tiny_bert_dir), "--train-data", "20newsgroups",
                                   "--data", str(data_root), "--out", str(out), "--max-steps", "2", "--batch-size", "8",
                                   "--max-length", "32", "--max-examples", "200", "--eval-steps", "0", "--device", "cpu"])
    assert res.exit_code == 0, res.output
    assert "memory: about " in res.output  # before the first step
    line = next(x for x in res.output.splitlines() if x.startswith("memory: peak"))
    assert f"disk: {out} " in line and "best/ " in line
    assert "checkpoint-last/ is the weights and optimiser state for --resume" in line
    assert (out / "checkpoint-last" / "state.pt").is_file()  # a single run can still be continued


@pytest.mark.slow
def test_a_finished_seed_keeps_its_model_not_its_resume_state(tiny_bert_dir, data_root, tmp_path):
    out = tmp_path / "group"
    args = ["train", "--method", "crop", "-m", str(tiny_bert_dir), "--train-data", "20newsgroups", "--data",
            str(data_root), "--out", str(out), "--max-steps", "2", "--batch-size", "8", "--max-length", "32",
            "--max-examples", "200", "--eval-steps", "0", "--device", "cpu", "--seeds", "1-2", "-q"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    for s in (1, 2):
        seed = out / f"seed-{s}"
        assert (seed / "best" / "model.safetensors").is_file() and not (seed / "checkpoint-last").exists()
        assert folder_bytes(seed) < 1.5 * folder_bytes(seed / "best")  # the model and a few small files
        assert f"seed {s}: memory: peak" in res.output
    assert "was removed: a finished seed is never resumed" in res.output
    # the same command again keeps the finished seeds; with --overwrite every seed trains again
    (out / "seed-1" / "best" / "mark").write_text("kept")
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and (out / "seed-1" / "best" / "mark").is_file() and "memory: peak" not in again.output
    # a seed added under other options would mix two recipes in one mean (and seeds.json said all had the new ones)
    other = CliRunner().invoke(app, [*[a if a != "1-2" else "1-3" for a in args], "--lr", "0.01", "--save-steps", "1"])  # how it runs may differ
    assert other.exit_code != 0 and not (out / "seed-3").exists()
    assert "holds a seed group trained with other options; this run has lr=0.01 (the group's seeds: " in " ".join((str(other.exception) + other.output).split())
    fresh = CliRunner().invoke(app, [*args, "--overwrite"])
    assert fresh.exit_code == 0, fresh.output
    assert not (out / "seed-1" / "best" / "mark").exists() and fresh.output.count("memory: peak") == 2
