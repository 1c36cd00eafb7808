"""A step that would not fit: split into micro-batches (GradCache), then gradient checkpointing, chosen up
front from the estimate or after an out of memory, with the update of one batch; and one message when
nothing is left (issue 31, item 5). The out of memory is raised by the model's forward, as CUDA's
allocator would, above a number of texts a pass."""

from __future__ import annotations

import json
import logging

import pytest
import torch
from transformers import BertModel

from embench.train import Trainer, fit_memory, make_config, memory_estimate
from embench.train.fit_memory import StepFit, StepOutOfMemory
from embench.train.length_groups import micro_sizes

pytestmark = pytest.mark.usefixtures("one_thread")


def _grads(trainer) -> dict[str, torch.Tensor]:
    """The step's gradients (kept after the update), of the weights that train."""
    return {n: p.grad.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}


def _same_gradients(expected: dict[str, torch.Tensor], got: dict[str, torch.Tensor]) -> None:
    assert expected.keys() == got.keys()
    for name, g in expected.items():
        # fp32 sums in another order (passes of other texts): elements far below the tensor's largest differ
        # by rounding only, so the absolute tolerance scales with it
        atol = max(1e-7, 1e-5 * float(g.abs().max()))
        torch.testing.assert_close(got[name], g, rtol=1e-4, atol=atol, msg=lambda m, name=name: f"{name}: {m}")


def _checkpointing(module) -> bool:
    return bool(getattr(module, "is_activation_checkpointing", None) or module.is_gradient_checkpointing)


def _oom_above(monkeypatch, rows: int, unless_checkpointing: bool = False, model_class=BertModel) -> list[int]:
    """BERT's forward runs out of memory on more than ``rows`` texts while gradients are kept (the no-grad
    first pass of GradCache keeps no activations); with ``unless_checkpointing``, only without checkpointing."""
    seen: list[int] = []
    forward = model_class.forward

    def limited(self, input_ids=None, *args, **kwargs):
        n = input_ids.shape[0]
        seen.append(n)
        if torch.is_grad_enabled() and n > rows and not (unless_checkpointing and _checkpointing(self)):
            raise torch.OutOfMemoryError(f"CUDA out of memory. Tried to allocate {n} texts' activations")
        return forward(self, input_ids, *args, **kwargs)

    monkeypatch.setattr(model_class, "forward", limited)
    return seen


def test_micro_batches_are_as_even_as_they_go():
    assert micro_sizes(10, 3) == [4, 3, 3]
    assert micro_sizes(16, 8) == [2] * 8
    assert micro_sizes(12, 8) == [2, 2, 2, 2, 1, 1, 1, 1]
    assert micro_sizes(5, 8) == [1] * 5  # never an empty micro-batch
    assert StepFit(8, True).describe(12) == "8 micro-batches of 2 example(s) with gradient checkpointing"


@pytest.mark.slow  # over a second (the fast tier stays under a minute)
def test_a_step_out_of_memory_is_taken_again_split_with_the_update_of_one_batch(simcse_trainer, tmp_path, monkeypatch, caplog):
    whole = simcse_trainer(tmp_path / "whole", batch_size=16)
    loss, _, _ = whole.step(0)
    expected = _grads(whole)
    seen = _oom_above(monkeypatch, rows=6)  # 16 examples x 2 views: 32 texts; a pass of 6 or fewer fits
    split = simcse_trainer(tmp_path / "split", batch_size=16)
    with caplog.at_level(logging.WARNING, logger="embench.train.fit_memory"):
        loss_split, _, _ = split.step(0)
    # 1 -> 2 -> 4 -> 8 micro-batches: 2 examples (4 texts) a pass fit
    assert split.step_fit == StepFit(8, False)
    assert max(n for n in seen) > 6 and seen[-1] <= 6
    assert loss_split == pytest.approx(loss, rel=1e-5)
    got = _grads(split)
    _same_gradients(expected, got)
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 3 and "taking it again as 8 micro-batches of 2 example(s)" in said[-1], said
    assert json.loads((tmp_path / "split/train_config.json").read_text())["micro_batches"] == 8
    assert split.history[-1] == {"step": 0, "micro_batches": 8, "gradient_checkpointing_used": False}


@pytest.mark.slow
def test_uneven_micro_batches_then_checkpointing_give_the_same_update(simcse_trainer, tmp_path, monkeypatch):
    whole = simcse_trainer(tmp_path / "whole", batch_size=12)
    loss, _, _ = whole.step(0)
    expected = _grads(whole)
    _oom_above(monkeypatch, rows=0, unless_checkpointing=True)  # nothing fits until activations are recomputed
    t = simcse_trainer(tmp_path / "ckpt", batch_size=12)
    loss_ckpt, _, _ = t.step(0)
    # 1, 2, 4, 8 (uneven: 2,2,2,2,1,1,1,1), 12 micro-batches, then checkpointing on at 12
    assert t.step_fit == StepFit(12, True) and _checkpointing(t.model.encoder)
    assert loss_ckpt == pytest.approx(loss, rel=1e-5)
    got = _grads(t)
    _same_gradients(expected, got)


@pytest.mark.slow  # over a second: a whole run (fast tier under a minute)
def test_nothing_left_to_try_is_one_message(simcse_trainer, tmp_path, monkeypatch):
    _oom_above(monkeypatch, rows=0)
    t = simcse_trainer(tmp_path / "api", batch_size=4)
    with pytest.raises(StepOutOfMemory) as e:
        t.step(0)
    text = str(e.value)
    assert "step 1 ran as 4 micro-batches of 1 example(s) with gradient checkpointing" in text
    assert "nothing smaller is left to try" in text and "--max-length" in text and "Tried to allocate" in text
    assert e.value.exit_status == 3


@pytest.mark.slow
def test_the_cli_stops_with_the_message_and_status_3(tiny_bert_dir, wiki_corpus, data_root, tmp_path, monkeypatch):
    import subprocess
    import sys

    # a child process whose BERT runs out of memory on any pass with gradients: what a user sees, and the status
    code = (f"import torch, transformers, sys\n"
            f"def oom(self, *a, **k):\n"
            f"    if torch.is_grad_enabled(): raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 2 GiB')\n"
            f"    return forward(self, *a, **k)\n"
            f"forward = transformers.BertModel.forward\n"
            f"transformers.BertModel.forward = oom\n"
            f"from embench.cli.app import main\n"
            f"sys.argv = ['embench', 'train', '--method', 'unsup-simcse', '--model', {str(tiny_bert_dir)!r}, '--train-data',"
            f" {str(wiki_corpus)!r}, '--data', {str(data_root)!r}, '--out', {str(tmp_path / 'cli')!r}, '--max-steps', '1',"
            f" '--batch-size', '4', '--eval-steps', '0', '--quiet']\n"
            f"main()\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 3, res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert "Traceback" not in res.stderr and lines[-1].startswith("error: out of memory (CUDA out of memory"), res.stderr
    assert "4 micro-batches of 1 example(s) with gradient checkpointing" in lines[-1]


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_no_auto_fit_runs_the_step_as_set_and_says_what_to_set(simcse_trainer, tmp_path, monkeypatch):
    _oom_above(monkeypatch, rows=4)
    t = simcse_trainer(tmp_path / "off", auto_fit=False)
    with pytest.raises(StepOutOfMemory, match=r"--no-auto-fit: not split further\. To fit, set --grad-accumulation 2, "):
        t.step(0)


def test_other_errors_are_not_retried(simcse_trainer, tmp_path, monkeypatch):
    calls = []

    def broken(self, *a, **k):
        calls.append(1)
        raise RuntimeError("an index out of range")

    monkeypatch.setattr(BertModel, "forward", broken)
    t = simcse_trainer(tmp_path / "err")
    with pytest.raises(RuntimeError, match="index out of range"):
        t.step(0)
    assert len(calls) == 1


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_the_split_is_chosen_before_the_first_step_from_the_estimate(simcse_trainer, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(memory_estimate, "in_use_bytes", lambda device: 0)
    probe = simcse_trainer(tmp_path / "probe")
    est = memory_estimate.estimate_step(probe)
    # a device where a fifth of the activations (plus the optimiser state) fits the share a split may use
    available = (est.state + est.activations / 5) / fit_memory.FIT_SHARE
    monkeypatch.setattr(memory_estimate, "available_bytes", lambda device: int(available) + 1)
    capsys.readouterr()
    t = simcse_trainer(tmp_path / "chosen", progress=True)
    assert t.step_fit == StepFit(5, False)  # the smallest count under the room: activations / 5
    assert json.loads((tmp_path / "chosen/train_config.json").read_text())["micro_batches"] == 5
    said = capsys.readouterr().err
    assert "memory: each step runs as 5 micro-batches of 7 example(s) (GradCache" in said, said  # 7,7,6,6,6
    # the same device without --auto-fit: the step runs as set
    assert simcse_trainer(tmp_path / "as-set", auto_fit=False).step_fit == StepFit(1, False)


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_checkpointing_is_chosen_when_no_split_fits(simcse_trainer, tiny_model, tmp_path, monkeypatch):
    from transformers import BertConfig

    deep = tiny_model("deep-bert", lambda vocab: BertModel(BertConfig(
        vocab_size=vocab, hidden_size=32, num_hidden_layers=8, num_attention_heads=2, intermediate_size=64)))
    monkeypatch.setattr(memory_estimate, "in_use_bytes", lambda device: 0)
    probe = simcse_trainer(model=deep, out=tmp_path / "probe", batch_size=2)
    plain = memory_estimate.estimate_step(probe)
    recomputed = memory_estimate.estimate_step(probe, checkpointing=True)
    # 8 layers keep 8 x (16 h + 2 f) values a token; checkpointing keeps 8 h + one layer's (16 h + 2 f)
    assert recomputed.activations < plain.activations / 2
    available = (plain.state + recomputed.activations) / fit_memory.FIT_SHARE
    monkeypatch.setattr(memory_estimate, "available_bytes", lambda device: int(available) + 1)
    t = simcse_trainer(model=deep, out=tmp_path / "ckpt", batch_size=2)
    assert t.step_fit == StepFit(1, True) and _checkpointing(t.model.encoder)
    t.step(0)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sum", "billm"])
def test_a_lora_bellm_step_split_after_an_out_of_memory_is_the_same_update(tiny_llama_dir, data_root, tmp_path, monkeypatch, mode):
    from transformers import LlamaModel

    triplets = tmp_path / "nli.csv"
    rows = [("A man plays a guitar.", "A person makes music.", "Nobody is playing."),
            ("Two dogs run in snow.", "Animals are outside.", "The dogs sleep inside.")] * 4
    triplets.write_text("sent0,sent1,hard_neg\n" + "\n".join(",".join(r) for r in rows) + "\n")

    # billm's last layer attends to padding (the authors' package), so a text's vector depends on its pass's
    # padding: a split step is the whole batch's update where no text is padded (each cut to the shortest's length)
    max_length = 24
    if mode == "billm":
        from transformers import AutoTokenizer

        from embench.models.families import apply_prompt
        from embench.train.methods.bellm import BeLLM

        texts = apply_prompt(BeLLM.defaults["prompt"], [t for r in rows for t in r])
        max_length = min(len(ids) for ids in AutoTokenizer.from_pretrained(tiny_llama_dir)(texts)["input_ids"])

    def step(out):
        t = Trainer(make_config(method="bellm", model=str(tiny_llama_dir), data=[str(triplets)], data_root=str(data_root),
                                out=str(out), max_steps=1, batch_size=8, max_length=max_length, lora_r=4, lora_dropout=0.0,
                                bidirectional_mode=mode, angle_weight=1.0, progress=False, precision="fp32"))
        t.setup()
        loss, _, _ = t.step(0)
        return t, loss

    whole, loss = step(tmp_path / "whole")
    expected = _grads(whole)
    _oom_above(monkeypatch, rows=6, model_class=LlamaModel)  # 8 triplets: 24 texts; 2 triplets (6 texts) a pass fit
    split, loss_split = step(tmp_path / "split")
    assert split.step_fit == StepFit(4, False)
    assert loss_split == pytest.approx(loss, rel=1e-5)
    got = _grads(split)
    _same_gradients(expected, got)
