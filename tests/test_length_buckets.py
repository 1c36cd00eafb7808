"""One pass over many texts of unlike length runs in length buckets (``SentenceModel.forward``, ``bucket_tokens``):
the vectors, loss and gradients of one padded pass, fewer padded tokens; the trainer tokenizes the buckets ahead;
the memory fitting prefers one checkpointed pass in buckets to a split (``fit_memory.py``)."""

from __future__ import annotations

import math

import pytest
import torch

from embench.train import fit_memory, make_config, memory_estimate
from embench.train.fit_memory import StepFit
from embench.train.length_groups import length_buckets, text_groups
from embench.train.step import pretokenize_next, step_batches

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = ["a man", "two dogs run through the deep snow of a mountain valley at dawn", "a cat sleeps",
         "children play football in a park near the river while their parents watch", "rain",
         "the old train station was closed", "she reads", "a group of tourists takes photos of the cathedral"]


def _grads(module) -> dict[str, torch.Tensor]:
    return {n: p.grad.detach().clone() for n, p in module.named_parameters() if p.grad is not None}


def test_buckets_by_hand():
    # 6 texts of up to 10 tokens, 60 padded as one pass; a budget of 20: ceil(60 / 20) = 3 parts, so each bucket
    # pads at most ceil(6 / 3) = 2 texts to 10 tokens: [10, 10] and [5, 4, 3, 2] (4 x 5 = 20): 40 padded for 34 real
    assert length_buckets([3, 10, 5, 10, 2, 4], 20) == text_groups([3, 10, 5, 10, 2, 4], 3) == [[1, 3], [2, 5, 0, 4]]
    assert length_buckets([3, 10, 5, 10, 2, 4], 60) is None  # the whole pass fits the budget
    assert length_buckets([3, 10, 5, 10, 2, 4], 0) is None  # no budget: one pass
    assert length_buckets([50], 8) is None  # one text is one pass, whatever its length


def _vectors_and_grads(model, texts):
    model.zero_grad(set_to_none=True)
    before = (model.tokens, model.padded_tokens)
    z = model(texts)
    (z * torch.linspace(-1, 1, z.shape[1])).sum().backward()  # a gradient that weighs every row and unit
    return z.detach(), _grads(model), model.tokens - before[0], model.padded_tokens - before[1]


@pytest.mark.parametrize("which", ["bert", pytest.param("llama-sum", marks=pytest.mark.slow),  # LoRA Llama: 3 s
                                   pytest.param("llama-mask", marks=pytest.mark.slow)])
def test_a_pass_in_buckets_gives_the_vectors_and_gradients_of_one_padded_pass(which, tiny_bert_dir, tiny_llama_dir,
                                                                             data_root, tmp_path):
    """BERT (right padding, mean pooling) and a LoRA Llama (left padding, the last token; Eq. 5's sum and the
    mask-only reading): each row is the row of the whole padded pass, in the texts' order, with the same gradients."""
    if which == "bert":
        cfg = make_config(method="unsup-simcse", model=str(tiny_bert_dir), pooling="mean", mlp="none", dropout=0.0)
    else:
        cfg = make_config(method="bellm", model=str(tiny_llama_dir), lora_r=4, lora_dropout=0.0,
                          bidirectional_mode=which.split("-")[1])
    cfg = make_config(**{**cfg.to_dict(), "data_root": str(data_root), "out": str(tmp_path / "run"), "max_length": 32,
                         "precision": "fp32", "progress": False})
    from embench.train.methods import METHODS
    from embench.train.resolution import resolve

    cfg = resolve(cfg)
    model = METHODS.get(cfg.method)(cfg).build("cpu")
    model.train()
    texts = [t for t in TEXTS for _ in range(2)]  # as SimCSE passes them: each text twice
    # the inputs are the tokenizer's own (read from its Rust backend, padded on its side, with the run's prompt)
    from embench.models.families import apply_prompt

    theirs = model.tokenizer(apply_prompt(model.prompt, texts), padding=True, truncation=True, max_length=32,
                             return_tensors="pt")
    ours = model.tokenize(texts)
    assert ours.keys() - {"lengths"} == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in theirs)
    assert ours["lengths"].tolist() == theirs["attention_mask"].sum(1).tolist()  # the rows' lengths, on the host
    model.bucket_tokens = 0
    z, grads, real, padded = _vectors_and_grads(model, texts)
    model.bucket_tokens = 60  # 16 texts of up to ~20 tokens: several buckets
    plan = model.buckets(texts)
    assert plan is not None and len(plan) > 2 and sorted(i for g in plan for i in g) == list(range(len(texts)))
    zb, grads_b, real_b, padded_b = _vectors_and_grads(model, texts)
    torch.testing.assert_close(zb, z, rtol=1e-5, atol=1e-6)
    assert grads.keys() == grads_b.keys() and grads
    for name, g in grads.items():
        torch.testing.assert_close(grads_b[name], g, rtol=1e-4, atol=max(1e-7, 1e-5 * float(g.abs().max())),
                                   msg=lambda m, name=name: f"{name}: {m}")
    assert real_b == real and padded_b < 0.8 * padded  # the same real tokens; each bucket padded near its own length


def test_the_trainer_tokenizes_the_buckets_of_the_next_step_ahead(simcse_trainer, tmp_path, monkeypatch):
    """``pretokenize`` cuts a pass into the buckets ``forward`` will use, so the step tokenizes nothing itself."""
    t = simcse_trainer(tmp_path / "run", bucket_tokens=100)
    model = t.model
    pretokenize_next(t, 0)
    texts = t.method.pass_texts(step_batches(t, 0)[0])
    plan = model.buckets(texts)
    assert plan is not None and len(plan) > 1
    longest = max(model.token_lengths(texts))
    monkeypatch.setattr(type(model), "_tokenized", lambda self, texts: pytest.fail("tokenized during the step"))
    monkeypatch.setattr(type(model), "token_lengths", lambda self, texts: pytest.fail("measured during the step"))
    loss, _, _ = t.step(0)
    assert math.isfinite(loss) and 0 < model.padded_tokens < len(texts) * longest  # in buckets


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_a_step_in_buckets_is_the_step_of_one_pass(simcse_trainer, tmp_path):
    """The trainer's step (loss, gradients) with its pass in buckets equals the unbucketed step; it pads less."""
    def step(out, **kw):
        t = simcse_trainer(out, **kw)
        loss = t.step(0)[0]
        return t, loss, {n: p.grad.detach().clone() for n, p in t.model.named_parameters() if p.requires_grad}

    whole, loss, grads = step(tmp_path / "whole", bucket_tokens=0)
    cut, loss_b, grads_b = step(tmp_path / "buckets", bucket_tokens=150)
    off, loss_o, _ = step(tmp_path / "off", bucket_tokens=150, group_by_length=False)  # no grouping: no buckets
    assert loss_b == pytest.approx(loss, rel=1e-5) and loss_o == pytest.approx(loss, rel=1e-5)
    for name, g in grads.items():
        torch.testing.assert_close(grads_b[name], g, rtol=1e-4, atol=max(1e-7, 1e-5 * float(g.abs().max())))
    assert cut.model.tokens == whole.model.tokens == off.model.tokens
    assert cut.model.padded_tokens < whole.model.padded_tokens == off.model.padded_tokens


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_the_fitting_prefers_one_checkpointed_pass_in_buckets_to_a_split(simcse_trainer, tmp_path, monkeypatch, capsys):
    """Where the step's pass is cut into buckets and fits with checkpointing, that is chosen before micro-batches (the
    same 8 N a token, fewer and larger passes); where it is not cut, a split comes first, as before."""
    monkeypatch.setattr(memory_estimate, "in_use_bytes", lambda device: 0)
    probe = simcse_trainer(tmp_path / "probe", bucket_tokens=150)
    plain = memory_estimate.estimate_step(probe)
    recomputed = memory_estimate.estimate_step(probe, checkpointing=True)
    assert recomputed.bucket_share < 1 and recomputed.total < plain.total
    # one layer of one bucket is recomputed at a time: a smaller share of a pass than without buckets
    whole = memory_estimate.estimate_step(simcse_trainer(tmp_path / "probe-whole", bucket_tokens=0), checkpointing=True)
    assert recomputed.total < whole.total
    available = (recomputed.total + 1) / fit_memory.FIT_SHARE  # checkpointing in buckets fits; one plain pass not
    monkeypatch.setattr(memory_estimate, "available_bytes", lambda device: int(available) + 1)
    capsys.readouterr()
    t = simcse_trainer(tmp_path / "chosen", bucket_tokens=150, progress=True)
    assert t.step_fit == StepFit(1, True)
    said = capsys.readouterr().err
    assert "one pass of 32 example(s) with gradient checkpointing (its texts in length buckets of about 150" in said
    t.step(0)
    # no buckets (grouping off): the split comes first
    assert simcse_trainer(tmp_path / "split", bucket_tokens=150, group_by_length=False).step_fit.micro_batches > 1


def test_bucket_tokens_is_checked_and_resumes_as_a_change_said_aloud():
    from embench.core.errors import EmbenchError
    from embench.train.checkpoints import ANNOUNCED_KEYS
    from embench.train.resolution import resolve

    with pytest.raises(EmbenchError, match="bucket_tokens must be at least 0, got -1"):
        resolve(make_config(method="unsup-simcse", model="m", bucket_tokens=-1))
    assert "bucket_tokens" in ANNOUNCED_KEYS


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sum", "mask"])
def test_a_lora_bellm_step_in_buckets_with_checkpointing_is_the_step_of_one_pass(tiny_llama_dir, data_root, tmp_path, mode):
    """What the fitting now chooses for the 7B recipe, on a tiny Llama: LoRA, Eq. 5's parallel branch (or the
    mask-only reading), activations recomputed in backward, the pass in length buckets; the step's loss and
    gradients equal those of the plain padded pass."""
    from embench.train import Trainer

    triplets = tmp_path / "nli.csv"
    rows = [("A man plays a guitar on a stage in front of a large crowd.", "A person makes music.", "Nobody plays."),
            ("Two dogs run in snow.", "Animals are outside in the cold winter weather today.", "Dogs sleep."),
            ("Rain.", "It is wet.", "The sun shines brightly over the dry desert all afternoon long.")] * 3
    triplets.write_text("sent0,sent1,hard_neg\n" + "\n".join(",".join(r) for r in rows) + "\n")

    def step(out, **kw):
        t = Trainer(make_config(method="bellm", model=str(tiny_llama_dir), data=[str(triplets)], data_root=str(data_root),
                                out=str(out), max_steps=1, batch_size=9, max_length=40, lora_r=4, lora_dropout=0.0,
                                bidirectional_mode=mode, progress=False, precision="fp32", **kw))
        t.setup()
        loss = t.step(0)[0]
        return t, loss, {n: p.grad.detach().clone() for n, p in t.model.named_parameters() if p.requires_grad}

    whole, loss, grads = step(tmp_path / "whole", bucket_tokens=0)
    cut, loss_b, grads_b = step(tmp_path / "buckets", bucket_tokens=120, gradient_checkpointing=True)
    assert cut.model.buckets(cut.method.pass_texts(step_batches(cut, 0)[0])) is not None
    assert any(getattr(m, "is_gradient_checkpointing", False) for m in cut.model.modules())  # recomputed in backward
    assert not any(getattr(m, "is_gradient_checkpointing", False) for m in whole.model.modules())
    assert loss_b == pytest.approx(loss, rel=1e-5)
    assert grads.keys() == grads_b.keys() and grads
    for name, g in grads.items():
        torch.testing.assert_close(grads_b[name], g, rtol=1e-4, atol=max(1e-7, 1e-5 * float(g.abs().max())),
                                   msg=lambda m, name=name: f"{name}: {m}")
    assert cut.model.padded_tokens < whole.model.padded_tokens
