"""One pass over many texts of unlike length runs in length buckets (``SentenceModel.forward``, ``bucket_tokens``):
the vectors, loss and gradients of one padded pass, fewer padded tokens; the trainer tokenizes the buckets ahead;
the memory fitting prefers one checkpointed pass in buckets to a split (``fit_memory.py``)."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
import torch

from embench.core.length_cuts import least_cost_cuts
from embench.encoding.batching import cut_batches
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
    # 6 texts of 34 real tokens, 60 padded as one pass; longest first: positions 1, 3 (10 tokens), 2 (5), 5 (4), 0 (3),
    # 4 (2). A budget of 20 with no floor: runs of one length cost no padding, and the two 10s fit one bucket (20)
    assert length_buckets([3, 10, 5, 10, 2, 4], 20) == [[1, 3], [2], [5], [0], [4]]  # 34 padded: the real tokens
    # a floor of 8: [10 10] 20 + [5 4] 10 + [3 2] max(6, 8) = 38; [10 10] + [5 4 3 2] (4 x 5) is 40, [5] [4 3 2] 8 + 12
    # + 20 = 40, [5 4] [3] [2] 20 + 10 + 8 + 8 = 46; [10] [10] costs 20 as well, but in more buckets
    assert length_buckets([3, 10, 5, 10, 2, 4], 20, floor=8) == [[1, 3], [2, 5], [0, 4]]
    # a floor at the budget: every bucket costs the same, so the fewest: [10 10] and [5 4 3 2] (4 x 5 = 20 tokens),
    # as many as the even split by text (``text_groups``, ceil(60 / 20) = 3 parts of at most 2 texts at 10 tokens)
    assert length_buckets([3, 10, 5, 10, 2, 4], 20, floor=20) == text_groups([3, 10, 5, 10, 2, 4], 3) \
        == [[1, 3], [2, 5, 0, 4]] == length_buckets([3, 10, 5, 10, 2, 4], 20, floor=500)  # a floor over the budget: at it
    assert length_buckets([3, 10, 5, 10, 2, 4], 60) is None  # the whole pass fits the budget
    assert length_buckets([3, 10, 5, 10, 2, 4], 0) is None  # no budget: one pass
    assert length_buckets([50], 8) is None  # one text is one pass, whatever its length
    assert length_buckets([50, 3, 3], 8) == [[0], [1, 2]]  # a text over the budget is a bucket of its own


@pytest.mark.parametrize("seed", range(60))
def test_the_cuts_cost_least_of_every_way_to_cut(seed):
    """``least_cost_cuts`` against every cut of the sorted lengths into runs (2^(n-1) of them): the same least cost,
    no run over the budget unless it is one text, and of the cuts of that cost the least padding, then the fewest runs."""
    rng = random.Random(seed)
    desc = sorted((rng.randint(1, 12) for _ in range(rng.randint(1, 10))), reverse=True)
    budget, floor = rng.randint(1, 40), rng.choice([0, rng.randint(1, 30)])

    def cost(bounds):
        runs = list(itertools.pairwise(bounds))
        if any((b - a) * desc[a] > budget and b - a > 1 for a, b in runs):
            return None
        return sum(max((b - a) * desc[a], floor) for a, b in runs), sum((b - a) * desc[a] for a, b in runs), len(runs)

    n = len(desc)
    every = [[0, *(i for i, cut in enumerate(mask, 1) if cut), n] for mask in itertools.product([0, 1], repeat=n - 1)]
    best = min(c for c in map(cost, every) if c is not None)
    assert cost(least_cost_cuts(desc, budget, floor)) == best


def _filled_longest_first(lengths: list[int], budget: int) -> list[list[int]]:
    """The cut before 2026-11-28, the reference: texts longest first, each pass filled in turn to ``budget``, as
    the engine still fills CUDA graphs' batches (``cut_batches(..., least_padding=False)``)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    desc = np.array([lengths[i] for i in order])
    return [order[lo:hi] for lo, hi in cut_batches(desc, None, budget, least_padding=False)]


@pytest.mark.slow
def test_the_bellm_step_pads_less_in_least_cost_buckets(data_root, minilm_path):
    """The docstrings' figures: the bellm recipe's prompted SNLI triplets (768 texts of up to 60 tokens, three random
    steps of 256, all-MiniLM-L6-v2's tokenizer), 15.0-15.2k real tokens. One pass in buckets of 8,192: 19.8-20.8k
    padded in 3 buckets filled longest first (the cut before 2026-11-28), 18.6-19.6k in as many cut at least cost,
    16.3-16.7k at least cost with a floor of 2,048 (7 buckets). A split into 10 parts by text: 17.7-18.8k in 5 passes
    filled longest first, 16.8-17.1k in as many cut at least cost."""
    from transformers import AutoTokenizer

    from embench.data import DataRoot
    from embench.data.training_sets import snli_triplets

    def padded(plan):
        return sum(len(b) * max(lengths[i] for i in b) for b in plan)

    tok = AutoTokenizer.from_pretrained(str(minilm_path))
    triplets, rng = snli_triplets(DataRoot(data_root)), random.Random(0)
    for _ in range(3):
        texts = [f"The representative word for sentence {t} is:" for row in rng.sample(triplets, 256) for t in row]
        lengths = [min(60, len(x)) for x in tok(texts)["input_ids"]]
        n, longest = len(lengths), max(lengths)
        assert 15_000 <= sum(lengths) <= 15_250
        old_budget = -(-n // -(-n * longest // 8192)) * longest  # the old cut: as many parts as 8,192 tokens needed
        plans = (_filled_longest_first(lengths, old_budget), length_buckets(lengths, 8192, 8192),
                 length_buckets(lengths, 8192, 2048))
        assert [len(p) for p in plans] == [3, 3, 7]
        got = [padded(p) for p in plans]
        assert 19_750 <= got[0] <= 20_850 and 18_550 <= got[1] <= 19_600 and 16_250 <= got[2] <= 16_700, got
        split = _filled_longest_first(lengths, -(-n // 10) * longest), text_groups(lengths, 10)
        assert [len(p) for p in split] == [5, 5]
        got = [padded(p) for p in split]
        assert 17_650 <= got[0] <= 18_850 and 16_800 <= got[1] <= 17_100, got


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
    with pytest.raises(EmbenchError, match="--set bucket_min_tokens must be at least 0, got -5"):
        resolve(make_config(method="unsup-simcse", model="m", bucket_min_tokens=-5))
    assert "bucket_tokens" in ANNOUNCED_KEYS and "bucket_min_tokens" in ANNOUNCED_KEYS
    # unset, a bucket is counted as at least a quarter of the budget (as the engine's batches); set, as given
    assert resolve(make_config(method="unsup-simcse", model="m", bucket_tokens=1000)).bucket_min_tokens == 250
    assert resolve(make_config(method="unsup-simcse", model="m", bucket_min_tokens=0)).bucket_min_tokens == 0


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


@pytest.mark.parametrize("seed", range(3))
def test_beyond_most_bounds_the_cut_is_within_a_hair_of_the_exact_one(seed, monkeypatch):
    """Over ``MOST_BOUNDS`` texts the cut tries fewer places (``bounds_to_try``): neighbouring places always make a
    run within budget and cap, and the cost stays within 0.2 % of the exact cut's (every place tried)."""
    from embench.core import length_cuts

    rng = random.Random(seed)
    desc = sorted((min(512, int(rng.lognormvariate(3, 0.6))) + 1 for _ in range(3000)), reverse=True)
    budget, floor, cap = 65536, 16384, rng.choice([None, 700])
    places = length_cuts.bounds_to_try(desc, budget, cap or len(desc))
    assert places[0] == 0 and places[-1] == len(desc) and len(places) < len(desc) / 4
    for a, b in itertools.pairwise(places):
        assert (b - a) * desc[a] <= budget and b - a <= (cap or len(desc))

    def cost(bounds):  # what the cut minimises: the padded tokens, each run counted as at least the floor
        assert all((b - a) * desc[a] <= budget and b - a <= (cap or len(desc)) for a, b in itertools.pairwise(bounds))
        return sum(max((b - a) * desc[a], floor) for a, b in itertools.pairwise(bounds))

    thinned = cost(least_cost_cuts(desc, budget, floor, cap))
    monkeypatch.setattr(length_cuts, "MOST_BOUNDS", 10**6)
    exact = cost(least_cost_cuts(desc, budget, floor, cap))
    assert exact <= thinned <= exact * 1.002  # 0.00-0.12 % over on these three
