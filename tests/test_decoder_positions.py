"""GPT-2, a decoder with learned absolute positions, padded on the left: position ids counted from each text's first
real token (a text's vector no longer depends on its batch), a cache key and record identity apart from the vectors
it gave before (every other model's keys as they were), and BeLLM's bidirectional modes over its blocks, which get
their attention mask by position."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import embench
from embench.core.hashing import stable_hash
from embench.evaluation.results import record_key
from embench.models.attention_masks import model_inputs
from embench.models.bidirectional import MODES, make_bidirectional
from embench.models.positions import position_ids

TEXTS = ["a short one", "a much longer sentence with many more words in it than the other", "two dogs run"]


@pytest.fixture(scope="module")
def tiny_gpt2_dir(tiny_model):
    """A randomly initialised 2-layer GPT-2 (hidden 32) with MiniLM's real tokenizer ([CLS] 101, [SEP] 102)."""
    from transformers import GPT2Config, GPT2Model

    return tiny_model("tiny-gpt2", lambda vocab: GPT2Model(GPT2Config(
        vocab_size=vocab, n_embd=32, n_layer=2, n_head=2, n_positions=128, bos_token_id=101, eos_token_id=102)))


def test_position_ids_count_each_text_from_its_first_real_token():
    mask = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1], [1, 1, 0, 0]])  # left padded, none, right padded
    assert position_ids(mask).tolist() == [[0, 0, 0, 1], [0, 1, 2, 3], [0, 1, 0, 0]]


@pytest.mark.slow  # loads a model
def test_a_gpt2_sentence_has_one_vector_whatever_else_is_in_its_batch(tiny_gpt2_dir):
    """Its learned positions were numbered from column 0 across the left padding: the short text's vector moved with
    the longest text of its batch (STS-B dev scored 7.58 at --batch-size 1, 7.16 at 64)."""
    enc = embench.load_model(tiny_gpt2_dir, device="cpu")
    alone = np.stack([enc.encode_batch([t])[0] for t in TEXTS])
    np.testing.assert_allclose(enc.encode_batch(TEXTS), alone, atol=1e-5)
    np.testing.assert_allclose(enc.encode(TEXTS, batch_size=2), alone, atol=1e-5)  # the engine's batches by length


@pytest.mark.slow  # builds and loads models
@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_rotary_decoders_change_by_rounding_alone(kind, tiny_model, tiny_llama_dir, one_thread):
    """Rotary positions are relative: numbered per text or from column 0, the same vectors up to float rounding."""
    from transformers import Qwen2Config, Qwen2Model

    folder = tiny_llama_dir if kind == "llama" else tiny_model("tiny-qwen2", lambda vocab: Qwen2Model(Qwen2Config(
        vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
        intermediate_size=64, max_position_embeddings=128)))
    enc = embench.load_model(folder, device="cpu")
    batch = enc.tokenize(TEXTS)
    assert "position_ids" in model_inputs(enc.model, batch, "cpu")
    with torch.inference_mode():  # as the model ran before: no position ids, numbered from column 0
        states = enc.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    np.testing.assert_allclose(enc.encode_batch(TEXTS), states[:, -1].numpy(), atol=1e-5)


@pytest.mark.slow  # loads models
def test_gpt2_vectors_are_keyed_apart_from_the_old_ones_and_other_models_keep_their_keys(tiny_gpt2_dir, tiny_llama_dir,
                                                                                         tiny_bert_dir, minilm_path):
    """The keys as the formula gave them before the change: MiniLM's and a Llama's vectors and records stay valid;
    GPT-2's earlier vectors (numbered from column 0) are neither served from the cache nor taken for its records."""
    def head_key(enc, **extra):
        s = enc.settings
        return stable_hash({"fingerprint": enc.fingerprint, "pooling": s.pooling, "layer": None, "max_length": s.max_length,
                            "dtype": s.dtype, "normalize": s.normalize, "lowercase": False, "prompt": "", **extra}, 24)

    minilm, llama, gpt2 = (embench.load_model(p, device="cpu") for p in (minilm_path, tiny_llama_dir, tiny_gpt2_dir))
    assert minilm.cache_key() == head_key(minilm)
    assert llama.cache_key() == head_key(llama, padding_side="left")
    assert embench.load_model(tiny_bert_dir, device="cpu").settings.to_dict().get("positions_per_text") is None
    assert gpt2.settings.extra["positions_per_text"] is True and gpt2.cache_key() != head_key(gpt2, padding_side="left")
    old = {k: v for k, v in gpt2.describe().items() if k != "positions_per_text"}
    assert record_key("STS12", gpt2.describe(), {}) != record_key("STS12", old, {})
    assert gpt2.view(1).settings.extra["positions_per_text"] is True  # a layer view's vectors too


@pytest.mark.slow  # builds a model per mode
@pytest.mark.parametrize("mode", list(MODES))
def test_every_bidirectional_mode_runs_on_gpt2_and_its_layers_attend_both_ways(mode, tiny_gpt2_dir):
    """GPT-2's model hands each block its mask by position; the hooks added it again by keyword: "GPT2Block.forward()
    got multiple values for argument 'attention_mask'" in every mode, in `embench run` and `embench train`."""
    from transformers import GPT2Model

    ids = torch.tensor([[0, 0, 5, 9, 3, 7], [4, 8, 2, 6, 11, 13]])
    later = ids.clone()
    later[:, -1] = 42  # only the last token changes
    mask = torch.tensor([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]])
    for attention in ("eager", "sdpa"):
        for last in (0, 1, 2):
            model = make_bidirectional(GPT2Model.from_pretrained(tiny_gpt2_dir, attn_implementation=attention).eval(), last, mode)
            with torch.no_grad():
                a, b = (model(input_ids=x, attention_mask=mask).last_hidden_state for x in (ids, later))
            first = (a[0, 2] - b[0, 2]).abs().max(), (a[1, 0] - b[1, 0]).abs().max()  # each text's first token
            assert all((d > 1e-4) == (last > 0) for d in first), (attention, last, first)
    model = make_bidirectional(GPT2Model.from_pretrained(tiny_gpt2_dir), 1, mode)
    model.gradient_checkpointing_enable()  # training: each block called through its checkpointing wrapper
    model.train()
    model(input_ids=ids, attention_mask=mask).last_hidden_state.sum().backward()
    assert model.h[-1].attn.c_attn.weight.grad is not None
    vectors = embench.load_model(tiny_gpt2_dir, device="cpu", bidirectional_last=1, bidirectional_mode=mode).encode(TEXTS)
    assert vectors.shape == (3, 32) and np.isfinite(vectors).all()


@pytest.mark.slow  # builds and loads a model
def test_opt_keeps_its_vectors_and_key_and_runs_with_the_gpu_s_prepared_mask(tiny_model):
    """OPT counts its positions from the 2D padding mask itself: the same vectors and cache key as before. On CUDA it
    is handed a prepared 4D mask (attention_masks.py), from which it counted them and failed ("The size of tensor a
    (3) must match the size of tensor b (15)"); it now gets them counted from the 2D mask."""
    from transformers import OPTConfig, OPTModel

    folder = tiny_model("tiny-opt", lambda vocab: OPTModel(OPTConfig(
        vocab_size=vocab, hidden_size=32, word_embed_proj_dim=32, num_hidden_layers=2, ffn_dim=64, num_attention_heads=2,
        max_position_embeddings=128, pad_token_id=0, bos_token_id=101, eos_token_id=102)))
    enc = embench.load_model(folder, device="cpu")
    assert "positions_per_text" not in enc.settings.extra
    batch = enc.tokenize(TEXTS)
    with torch.inference_mode():
        before = enc.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state[:, -1]
        enc.model.config._attn_implementation = "sdpa"  # what the GPU path takes: the mask prepared as on CUDA
        gpu_way = enc.model(**model_inputs(enc.model, batch, "cuda")).last_hidden_state[:, -1]
    np.testing.assert_allclose(enc.encode_batch(TEXTS), before.numpy(), atol=1e-6)
    np.testing.assert_allclose(gpu_way.numpy(), before.numpy(), atol=1e-5)


@pytest.mark.slow  # builds and loads a model
def test_a_roberta_saved_as_a_causal_lm_counts_its_own_positions_and_keeps_its_key(tiny_model):
    """RoBERTa numbers positions from padding_idx + 1 itself: handed ids from 0 it was shifted, padded or not (1.58 on
    one unpadded text), and keyed apart from its correct old vectors."""
    from transformers import RobertaConfig, RobertaModel

    folder = tiny_model("tiny-roberta-decoder", lambda vocab: RobertaModel(RobertaConfig(
        vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=130, pad_token_id=0, is_decoder=True)))
    enc = embench.load_model(folder, device="cpu")
    assert "positions_per_text" not in enc.settings.extra
    batch = enc.tokenize(TEXTS[:1])  # one text: no padding
    with torch.inference_mode():
        own = enc.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    assert not np.allclose(enc.encode_batch(TEXTS[:1]), 0)
    got = enc.model(**model_inputs(enc.model, batch, "cpu")).last_hidden_state.detach()
    np.testing.assert_allclose(got.numpy(), own.numpy(), atol=1e-6)
