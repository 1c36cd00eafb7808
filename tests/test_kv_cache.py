"""Encoding and training never build a decoder's key/value cache (``models/kv_cache.py``): no cache object is made,
and the vectors are those of the forward that builds one."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import cache_utils

import embench
from embench.models.kv_cache import no_kv_cache
from embench.train import make_config

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = ["a man plays a guitar", "two dogs run through the snow", "rain"]


@pytest.fixture
def caches_made(monkeypatch) -> list[int]:
    made: list[int] = []
    init = cache_utils.DynamicCache.__init__

    def counted(self, *args, **kwargs):
        made.append(1)
        init(self, *args, **kwargs)

    monkeypatch.setattr(cache_utils.DynamicCache, "__init__", counted)
    return made


def test_only_a_decoder_that_asks_for_a_cache_is_told_not_to():
    from transformers import BertConfig, LlamaConfig

    assert no_kv_cache(LlamaConfig()) == {"use_cache": False}
    assert no_kv_cache(LlamaConfig(use_cache=False)) == {}
    assert no_kv_cache(BertConfig()) == {}  # use_cache is on, but an encoder builds no cache (nor may take the keyword)


def test_encoding_a_decoder_builds_no_cache_and_keeps_its_vectors(tiny_llama_dir, caches_made):
    enc = embench.load_model(str(tiny_llama_dir), device="cpu")
    vectors = enc.encode_batch(TEXTS)
    assert caches_made == []
    # the same forward with the config's cache on: one cache a call, the same last-token vectors
    inputs = enc.tokenize(TEXTS)
    with torch.inference_mode():
        states = enc.model(**inputs, return_dict=True).last_hidden_state
    assert caches_made == [1]
    np.testing.assert_allclose(vectors, states[:, -1].float().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # a LoRA method built and stepped: over a second
def test_a_training_pass_through_a_decoder_builds_no_cache(tiny_llama_dir, data_root, tmp_path, caches_made):
    from embench.train.methods import METHODS
    from embench.train.resolution import resolve

    cfg = resolve(make_config(method="bellm", model=str(tiny_llama_dir), lora_r=4, data_root=str(data_root),
                              out=str(tmp_path / "run"), max_length=32, precision="fp32", progress=False))
    model = METHODS.get(cfg.method)(cfg).build("cpu")
    model.train()
    model(TEXTS).sum().backward()
    assert caches_made == []
