"""On a GPU an encoder gets SDPA's 4D mask ready-made (``models/attention_masks.py``), so transformers never reads the
padding mask back from the device: the mask is the one transformers builds, the vectors are the same, and models
whose mask is built otherwise keep transformers' own path."""

from __future__ import annotations

import pytest
import torch
from transformers import (
    BertConfig,
    BertModel,
    LlamaConfig,
    LlamaModel,
    ModernBertConfig,
    ModernBertModel,
    masking_utils,
)

import embench
from embench.models.attention_masks import model_inputs, prepared_mask, takes_prepared_mask

pytestmark = pytest.mark.usefixtures("one_thread")


def _bert(attn: str = "sdpa") -> BertModel:
    torch.manual_seed(0)
    return BertModel(BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64, attn_implementation=attn)).eval()


def test_the_prepared_mask_is_the_one_transformers_builds():
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [1, 0, 0, 0]])
    model = _bert()
    theirs = masking_utils.create_bidirectional_mask(config=model.config, inputs_embeds=torch.zeros(3, 4, 32),
                                                     attention_mask=mask)
    ours = prepared_mask(mask)
    assert ours.dtype == theirs.dtype == torch.bool and ours.shape == theirs.shape == (3, 1, 4, 4)
    assert torch.equal(ours, theirs)
    # by hand: text 0 attends to its first three tokens from every position, text 2 to its first only
    assert ours[0, 0, 3].tolist() == [True, True, True, False] and ours[2, 0, 1].tolist() == [True, False, False, False]


def test_only_an_sdpa_encoder_that_builds_a_plain_bidirectional_mask_takes_it():
    assert takes_prepared_mask(_bert("sdpa"))
    assert not takes_prepared_mask(_bert("eager"))  # eager attention adds a float mask: transformers makes that one
    llama = LlamaModel(LlamaConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                   num_key_value_heads=2, intermediate_size=64, attn_implementation="sdpa"))
    assert not takes_prepared_mask(llama)  # causal
    modern = ModernBertModel(ModernBertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                              intermediate_size=64, attn_implementation="sdpa", pad_token_id=0,
                                              bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2))
    assert not takes_prepared_mask(modern)  # local (sliding-window) layers need masks of their own


def test_on_cuda_the_model_never_reads_the_mask_and_gives_the_same_states(monkeypatch):
    model = _bert()
    ids = torch.randint(5, 100, (3, 4))
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [1, 0, 0, 0]])
    with torch.no_grad():
        theirs = model(input_ids=ids, attention_mask=mask).last_hidden_state
        reads = []
        real = masking_utils._ignore_bidirectional_mask_sdpa
        monkeypatch.setattr(masking_utils, "_ignore_bidirectional_mask_sdpa", lambda *a, **k: reads.append(1) or real(*a, **k))
        ours = model(**model_inputs(model, {"input_ids": ids, "attention_mask": mask}, "cuda")).last_hidden_state
        assert reads == []  # the value check that waits for the GPU never ran
        on_cpu = model(**model_inputs(model, {"input_ids": ids, "attention_mask": mask}, "cpu")).last_hidden_state
        assert reads == [1]  # a CPU keeps transformers' own path
    assert torch.equal(ours, theirs) and torch.equal(on_cpu, theirs)


def test_the_encoder_hands_its_model_the_prepared_mask_on_cuda(tiny_bert_dir, monkeypatch):
    enc = embench.load_model(tiny_bert_dir, device="cpu")
    texts = ["a man plays a guitar", "two dogs run through the deep snow", "rain"]
    inputs = enc.tokenize(texts)
    expected = enc.forward_hidden(inputs, False).last_hidden_state
    seen = []
    hook = enc.model.register_forward_pre_hook(lambda m, args, kwargs: seen.append(kwargs["attention_mask"].dim()),
                                               with_kwargs=True)
    enc.device = "cuda"  # the tensors stay on the CPU; only the encoder's choice of path is a GPU's
    try:
        got = enc.forward_hidden(inputs, False).last_hidden_state
    finally:
        hook.remove()
    assert seen == [4]
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)
