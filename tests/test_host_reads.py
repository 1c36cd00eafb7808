"""A training step queues its forward and backward, and the engine a pass's batches, without reading a value back from
the device.

On a GPU a read (``float(loss_term)``, ``mask.sum().item()``, a boolean index, transformers' check for padding) makes
the host wait for the forward before it can queue the backward. The step reads the device once, after the backward is
queued: the loss, the gradient norm and every logged term together (``train/step.py``, ``read_step``). The engine
hands vectors back a chunk late (``encoding/host_copies.py``), by a copy, not a read of values. The reads are
counted on the CPU under a dispatch mode (``tests/host_reads.py``), with the encoders taking the GPU's ready-made
attention mask (``models/attention_masks.py``), as they do on CUDA.
"""

from __future__ import annotations

import math

import pytest
import torch
from host_reads import HostReads

import embench
import embench.encoding.batching as batching
import embench.encoding.engine as engine_mod
import embench.models.attention_masks as attention_masks
import embench.train.step as step_module
from embench.encoding.engine import Engine
from embench.train import Trainer, make_config
from embench.train.losses import mask_tokens
from embench.train.module import special_tokens

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def reads_in_steps(monkeypatch):
    """The reads made inside every step's forward and backward (``step.forward_backward``) of a run, with the
    encoders on their GPU path (the prepared mask)."""
    found: list = []
    monkeypatch.setattr(attention_masks, "waits_for_reads", lambda device: True)
    real = step_module.forward_backward

    def watched(t, step, batches):
        with HostReads() as reads:
            out = real(t, step, batches)
        found.extend(reads.calls)
        return out

    monkeypatch.setattr(step_module, "forward_backward", watched)
    return found


def _triplets(tmp_path):
    csv = tmp_path / "nli.csv"
    rows = [f"a man number {i} plays a guitar,a person {i} makes music,nobody {i} plays anything at all" for i in range(16)]
    csv.write_text("sent0,sent1,hard_neg\n" + "\n".join(rows) + "\n")
    return str(csv)


def _fit(tmp_path, **options):
    cfg = make_config(out=str(tmp_path / "run"), max_steps=2, eval_steps=0, log_steps=1, progress=False, device="cpu",
                      **options)
    result = Trainer(cfg).fit()
    logged = [h for h in result.history if "loss" in h]
    assert len(logged) == 2 and all(isinstance(h["loss"], float) and math.isfinite(h["grad_norm"]) for h in logged)
    return logged


def _numbers(logged: list[dict], *keys: str) -> bool:
    """The method's logged terms reached the log as numbers (read from their tensors with the loss)."""
    return all(isinstance(h[k], float) and math.isfinite(h[k]) for h in logged for k in keys)


@pytest.mark.slow
@pytest.mark.parametrize("grad_accumulation", [1, 2])
def test_simcse_steps_read_nothing_back_before_the_backward(reads_in_steps, tiny_bert_dir, wiki_corpus, data_root,
                                                            tmp_path, grad_accumulation):
    _fit(tmp_path, method="unsup-simcse", model=str(tiny_bert_dir), data=[str(wiki_corpus)], data_root=str(data_root),
         batch_size=8, max_length=16, grad_accumulation=grad_accumulation)
    assert reads_in_steps == []


@pytest.mark.slow
def test_multicsr_s_guide_masks_on_the_device_and_its_shares_are_logged_after_the_backward(reads_in_steps, tiny_bert_dir,
                                                                                          data_root, tmp_path):
    logged = _fit(tmp_path, method="sup-simcse", model=str(tiny_bert_dir), data=[_triplets(tmp_path)],
                  data_root=str(data_root), false_negative_filter=str(tiny_bert_dir), sigma=0.5, batch_size=8,
                  max_length=16)
    assert reads_in_steps == []
    assert _numbers(logged, "fn_masked_share", "fn_masked_pairs", "fn_masked_share_so_far")
    assert all(0.0 <= h["fn_masked_share"] <= 1.0 and h["fn_masked_pairs"] == int(h["fn_masked_pairs"]) for h in logged)


@pytest.mark.slow
def test_the_mlm_term_masks_tokens_without_reading_them_back(reads_in_steps, tiny_bert_dir, wiki_corpus, data_root,
                                                             tmp_path):
    logged = _fit(tmp_path, method="unsup-simcse", model=str(tiny_bert_dir), data=[str(wiki_corpus)],
                  data_root=str(data_root), batch_size=8, max_length=16, mlm_weight=0.1)
    assert reads_in_steps == []
    assert _numbers(logged, "mlm_loss") and all(h["mlm_loss"] > 0 for h in logged)


@pytest.mark.slow
def test_bellm_steps_read_nothing_back_before_the_backward(reads_in_steps, tiny_llama_dir, data_root, tmp_path):
    logged = _fit(tmp_path, method="bellm", model=str(tiny_llama_dir), data=[_triplets(tmp_path)],
                  data_root=str(data_root), batch_size=8, max_length=24, lora_r=4, precision="fp32")
    # the decoder gets its causal mask ready-made: transformers' check for padding read the mask twice a forward
    assert reads_in_steps == []
    assert _numbers(logged, "ibn_loss")


def test_the_special_tokens_are_the_tokenizer_s_own_mask(tiny_bert_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    enc = tok(["a man plays a guitar", "rain", "[MASK] is [UNK] here"], padding=True, return_tensors="pt")
    theirs = [tok.get_special_tokens_mask(ids, already_has_special_tokens=True) for ids in enc["input_ids"].tolist()]
    assert special_tokens(enc["input_ids"], tok).int().tolist() == theirs
    assert any(1 in row[1:-1] for row in theirs)  # [MASK] and [UNK] inside a text are special too


def test_mlm_masking_draws_what_boolean_indexing_drew():
    ids = torch.randint(5, 100, (4, 12))
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, 0] = special[:, -1] = True
    got = mask_tokens(ids, special, mask_token_id=1, vocab_size=100, probability=0.4,
                      generator=torch.Generator().manual_seed(7))
    # the same draws in the same order, applied by boolean indexing (this function's earlier form)
    g = torch.Generator().manual_seed(7)
    chosen = torch.bernoulli(torch.full(ids.shape, 0.4).masked_fill(special, 0.0), generator=g).bool()
    labels = ids.clone()
    labels[~chosen] = -100
    to_mask = torch.bernoulli(torch.full(ids.shape, 0.8), generator=g).bool() & chosen
    masked = ids.clone()
    masked[to_mask] = 1
    to_random = torch.bernoulli(torch.full(ids.shape, 0.5), generator=g).bool() & chosen & ~to_mask
    masked[to_random] = torch.randint(100, ids.shape, generator=g)[to_random]
    assert torch.equal(got[0], masked) and torch.equal(got[1], labels)
    assert to_mask.any() and to_random.any() and (~chosen & ~special).any()


def test_a_step_reads_its_logged_terms_with_the_loss(monkeypatch):
    """``read_step``: tensors on the loss's device in one stack (one copy to the host on a GPU), host values apart."""
    stacked = []
    real_stack = torch.stack
    monkeypatch.setattr(torch, "stack", lambda ts, *a, **k: stacked.append(len(ts)) or real_stack(ts, *a, **k))
    loss, norm = torch.tensor(2.5), torch.tensor(0.75)
    value, gnorm, logs = step_module.read_step(loss, norm, {"a": torch.tensor(1.0), "b": 0.25,
                                                            "c": torch.tensor([3.0]), "d": torch.tensor(4, dtype=torch.long)})
    assert (value, gnorm) == (2.5, 0.75) and logs == {"a": 1.0, "b": 0.25, "c": 3.0, "d": 4.0}
    assert list(logs) == ["a", "b", "c", "d"] and all(isinstance(v, float) for v in logs.values())
    assert stacked == [5]  # the loss, the norm and the three tensor terms


@pytest.mark.slow
@pytest.mark.parametrize("folder", ["tiny_bert_dir", "tiny_llama_dir"])
def test_an_encoding_pass_on_the_gpu_path_reads_nothing_back(folder, request, monkeypatch):
    """The engine's GPU path (chunked tokenisation on a second thread, token-budget batches, vectors handed back a
    chunk late), forced on the CPU, with the model's prepared mask: no value of the device is read mid-pass."""
    enc = embench.load_model(request.getfixturevalue(folder), device="cpu", pooling="mean")
    texts = [f"sentence number {i} with {'many ' * (i % 7)}words" for i in range(40)]
    reference = Engine(enc, batch_size=8).embed(texts)
    monkeypatch.setattr(batching, "GPU_FIRST_CHUNK", 8)
    monkeypatch.setattr(batching, "GPU_TOKENIZE_CHUNK", 8)
    monkeypatch.setattr(engine_mod, "FLUSH_EVERY", 10)
    gpu_batches = engine_mod._batches
    monkeypatch.setattr(engine_mod, "_batches", lambda engine, ts, on_cpu: gpu_batches(engine, ts, False))
    monkeypatch.setattr(attention_masks, "waits_for_reads", lambda device: True)
    with HostReads() as reads:
        out = Engine(enc, batch_tokens=64, cache_dir=None).embed(texts)
    assert reads.calls == []
    torch.testing.assert_close(torch.from_numpy(out), torch.from_numpy(reference), atol=1e-5, rtol=0)
    monkeypatch.setattr(attention_masks, "waits_for_reads", lambda device: False)  # transformers' mask: its check reads
    with HostReads() as reads:
        Engine(enc, batch_tokens=64, cache_dir=None).embed(texts[::-1])
    assert reads.calls and all(r.made_in("masking_utils.py") for r in reads.calls)


@pytest.mark.slow
def test_jtcse_s_twin_towers_and_cross_attention_read_nothing_back(reads_in_steps, tiny_bert_dir, wiki_corpus, data_root,
                                                                   tmp_path):
    logged = _fit(tmp_path, method="jtcse", model=str(tiny_bert_dir), tower2=str(tiny_bert_dir), data=[str(wiki_corpus)],
                  data_root=str(data_root), batch_size=8, max_length=16, cross_layers=2)
    assert reads_in_steps == []
    assert _numbers(logged, "l_nce", "l_icnce", "l_ictm")
