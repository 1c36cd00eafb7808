"""Layer removal (BeLLM Figure 4): the first N layers and the final norm, as a model built with N layers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

import embench
from embench.cli.app import app

TEXTS = ["A man plays a guitar.", "Two dogs run through a field of snow, barking loudly."]


@pytest.fixture(scope="module")
def tiny_llama_dir(tiny_model):
    from transformers import LlamaConfig, LlamaModel

    return tiny_model("tiny-llama-removal", lambda vocab: LlamaModel(LlamaConfig(
        vocab_size=vocab, hidden_size=32, num_hidden_layers=3, num_attention_heads=2, num_key_value_heads=2,
        intermediate_size=64, max_position_embeddings=128)))


def test_removing_layers_equals_a_model_built_with_fewer_layers(tiny_llama_dir, one_thread):
    from transformers import LlamaConfig, LlamaModel

    full = embench.load_model(tiny_llama_dir, prompt="bellm")
    state = full.model.state_dict()
    for kept in (1, 2, 3):
        cfg = LlamaConfig.from_pretrained(tiny_llama_dir, num_hidden_layers=kept)
        short = LlamaModel(cfg).eval()
        missing, _ = short.load_state_dict(state, strict=False)  # the layers above `kept` are left out
        assert missing == []
        want = embench.load_model(short, tokenizer=full.tokenizer, prompt="bellm").encode_batch(TEXTS)
        got = full.view(kept, final_norm=True).encode_batch(TEXTS)
        np.testing.assert_allclose(got, want, atol=1e-5)
        if kept < 3:  # pooling hidden_states[N] skips the final norm: not the truncated model
            assert not np.allclose(full.view(kept).encode_batch(TEXTS), want, atol=1e-3)
    # views are cached apart: the norm is part of the key
    assert full.view(1, final_norm=True).cache_key() != full.view(1).cache_key()
    assert full.view(3, final_norm=True).cache_key() == full.view(3).cache_key()


def test_a_bert_has_no_final_norm_so_its_layer_states_are_the_truncated_model(tiny_bert_dir):
    from embench.models.layer_stack import final_norm

    enc = embench.load_model(tiny_bert_dir, pooling="mean")
    assert final_norm(enc.model) is None
    np.testing.assert_allclose(enc.view(1, final_norm=True).encode_batch(TEXTS), enc.view(1).encode_batch(TEXTS), atol=0)
    assert torch.is_grad_enabled()


def test_cls_goes_through_the_pooler_head_at_every_layer_as_the_truncated_bert_gives_it(tiny_bert_dir, one_thread):
    """layer-removal (and layers) with BERT's cls took the pooler head at N = L only and the raw first token below it:
    one curve of two representations, neither point the truncated model it claimed to be."""
    from transformers import AutoModel, AutoTokenizer

    enc, tok = embench.load_model(tiny_bert_dir, pooling="cls"), AutoTokenizer.from_pretrained(tiny_bert_dir)
    for kept in (1, 2):
        short = AutoModel.from_pretrained(tiny_bert_dir, num_hidden_layers=kept).eval()
        with torch.no_grad():
            want = short(**tok(TEXTS, padding=True, return_tensors="pt")).pooler_output.numpy()
        np.testing.assert_allclose(enc.view(kept, final_norm=True).encode_batch(TEXTS), want, atol=1e-5)
        np.testing.assert_allclose(enc.view(kept).encode_batch(TEXTS), want, atol=1e-5)
    raw = enc.view(1, "cls_before_pooler")
    assert enc.view(1).cache_key() != raw.cache_key() and enc.view(1).describe()["pooler_head_layer"] == 1
    assert "pooler_head_layer" not in enc.view(2).describe()  # the last layer's key and records as they were


@pytest.mark.slow
def test_the_cli_draws_the_curve_and_keeps_the_settings(tiny_llama_dir, env):
    r = CliRunner().invoke(app, ["analyze", "layer-removal", "-m", str(tiny_llama_dir), "--prompt", "bellm",
                                 "--bidirectional-last", "1", "--out", str(env / "out"), "-q", "--limit", "1"])
    assert r.exit_code != 0 and "no --limit option" in str(r.exception)
    r = CliRunner().invoke(app, ["analyze", "layer-removal", "-m", str(tiny_llama_dir), "--prompt", "bellm",
                                 "--bidirectional-last", "1", "--out", str(env / "out"), "-q"])
    assert r.exit_code == 0, r.output
    import pandas as pd

    frame = pd.read_csv(env / "out" / "layer_removal.csv")
    assert frame["layers_kept"].tolist() == [1, 2, 3] and frame["layers_removed"].tolist() == [2, 1, 0]
    assert frame["final_norm"].all() and (frame["bidirectional_last"] == 1).all()
    assert frame["stsb_spearman"].between(-1, 1).all() and (env / "out" / "layer_removal.png").is_file()


def test_one_layer_finder_serves_encoders_decoders_and_their_wrappers():
    from transformers import (
        BertConfig,
        BertModel,
        DistilBertConfig,
        DistilBertModel,
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
    )

    from embench.core.errors import EmbenchError
    from embench.models.layer_stack import final_norm, transformer_layers

    small = {"vocab_size": 50}
    bert = BertModel(BertConfig(**small, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=8))
    distil = DistilBertModel(DistilBertConfig(**small, dim=8, n_layers=3, n_heads=2, hidden_dim=8))
    gpt2 = GPT2LMHeadModel(GPT2Config(**small, n_embd=8, n_layer=4, n_head=2, bos_token_id=0, eos_token_id=0))
    llama = LlamaForCausalLM(LlamaConfig(**small, hidden_size=8, num_hidden_layers=5, num_attention_heads=2,
                                         num_key_value_heads=2, intermediate_size=8))
    assert transformer_layers(bert) is bert.encoder.layer and final_norm(bert) is None
    assert transformer_layers(distil) is distil.transformer.layer and final_norm(distil) is None
    assert transformer_layers(gpt2) is gpt2.transformer.h and final_norm(gpt2) is gpt2.transformer.ln_f
    assert transformer_layers(llama) is llama.model.layers and final_norm(llama) is llama.model.norm
    with pytest.raises(EmbenchError, match="cannot find the transformer layers of a Linear"):
        transformer_layers(torch.nn.Linear(2, 2))
