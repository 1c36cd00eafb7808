"""On a GPU an encoder or a decoder gets SDPA's 4D mask ready-made (``models/attention_masks.py``), so transformers never
reads the padding mask back from the device: the mask is the one transformers builds, the vectors are the same, a batch
without padding gets no mask (as transformers gives it), and models whose mask is built otherwise keep transformers'
own path."""

from __future__ import annotations

import pytest
import torch
from transformers import (
    BertConfig,
    BertModel,
    LlamaConfig,
    LlamaModel,
    MistralConfig,
    MistralModel,
    ModernBertConfig,
    ModernBertModel,
    Qwen2Config,
    Qwen2Model,
    masking_utils,
)

import embench
from embench.models.attention_masks import (
    model_inputs,
    prepared_mask,
    prepared_mask_kind,
    takes_prepared_mask,
)

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


def _llama(attn: str = "sdpa") -> LlamaModel:
    torch.manual_seed(0)
    return LlamaModel(LlamaConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                  num_key_value_heads=2, intermediate_size=64, attn_implementation=attn)).eval()


def test_the_prepared_causal_mask_is_the_one_transformers_builds():
    mask = torch.tensor([[0, 1, 1, 1], [1, 1, 1, 1], [0, 0, 0, 1]])  # left padding, as decoders pool the last token
    model = _llama()
    theirs = masking_utils.create_causal_mask(config=model.config, inputs_embeds=torch.zeros(3, 4, 32),
                                              attention_mask=mask, past_key_values=None)
    ours = prepared_mask(mask, "causal")
    assert ours.dtype == theirs.dtype == torch.bool and ours.shape == theirs.shape == (3, 1, 4, 4)
    assert torch.equal(ours, theirs)
    # by hand: text 0's last query sees its three real tokens, its second query only itself, its first (padding) nothing
    assert ours[0, 0, 3].tolist() == [False, True, True, True] and ours[0, 0, 1].tolist() == [False, True, False, False]
    assert not ours[0, 0, 0].any() and ours[1, 0].equal(torch.ones(4, 4, dtype=torch.bool).tril())


def test_only_sdpa_models_whose_code_builds_a_plain_mask_take_it():
    assert prepared_mask_kind(_bert("sdpa")) == "bidirectional"
    assert not takes_prepared_mask(_bert("eager"))  # eager attention adds a float mask: transformers makes that one
    assert prepared_mask_kind(_llama()) == "causal"
    assert not takes_prepared_mask(_llama("eager"))
    small = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                 intermediate_size=64, attn_implementation="sdpa")
    assert prepared_mask_kind(Qwen2Model(Qwen2Config(**small))) == "causal"  # its sliding window is off by default
    assert not takes_prepared_mask(Qwen2Model(Qwen2Config(**small, use_sliding_window=True, sliding_window=2, max_window_layers=1)))
    assert not takes_prepared_mask(MistralModel(MistralConfig(**small, sliding_window=2)))
    assert prepared_mask_kind(MistralModel(MistralConfig(**small, sliding_window=None))) == "causal"
    modern = ModernBertModel(ModernBertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                              intermediate_size=64, attn_implementation="sdpa", pad_token_id=0,
                                              bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2))
    assert not takes_prepared_mask(modern)  # local (sliding-window) layers need masks of their own


@pytest.mark.parametrize(("make", "check", "mask"), [
    (_bert, "_ignore_bidirectional_mask_sdpa", [[1, 1, 1, 0], [1, 1, 1, 1], [1, 0, 0, 0]]),
    (_llama, "_ignore_causal_mask_sdpa", [[0, 1, 1, 1], [1, 1, 1, 1], [0, 0, 0, 1]]),
])
def test_on_cuda_the_model_never_reads_the_mask_and_gives_the_same_states(monkeypatch, make, check, mask):
    model = make()
    ids = torch.randint(5, 100, (3, 4))
    mask = torch.tensor(mask)
    lengths = mask.sum(1)  # the host's row lengths, as pad_rows keeps them
    with torch.no_grad():
        theirs = model(input_ids=ids, attention_mask=mask).last_hidden_state
        reads = []
        real = getattr(masking_utils, check)
        monkeypatch.setattr(masking_utils, check, lambda *a, **k: reads.append(1) or real(*a, **k))
        ours = model(**model_inputs(model, {"input_ids": ids, "attention_mask": mask, "lengths": lengths}, "cuda"))
        assert reads == []  # the value check that waits for the GPU never ran
        on_cpu = model(**model_inputs(model, {"input_ids": ids, "attention_mask": mask, "lengths": lengths}, "cpu"))
        assert reads  # a CPU keeps transformers' own path
    assert torch.equal(ours.last_hidden_state, theirs) and torch.equal(on_cpu.last_hidden_state, theirs)


def test_an_encoder_batch_without_padding_gets_no_mask_as_transformers_gives_it_and_a_decoder_s_the_causal_one():
    from host_reads import HostReads

    ids, mask, lengths = torch.randint(5, 100, (2, 4)), torch.ones(2, 4, dtype=torch.long), torch.tensor([4, 4])
    for model, mask_given in ((_bert(), None), (_llama(), "causal")):
        given = model_inputs(model, {"input_ids": ids, "attention_mask": mask, "lengths": lengths}, "cuda")
        assert "lengths" not in given
        if mask_given is None:
            assert given["attention_mask"] is None
        else:  # given None, a decoder reads its position ids back to look for packed sequences
            assert torch.equal(given["attention_mask"], prepared_mask(mask, "causal"))
        with torch.no_grad(), HostReads() as reads:
            ours = model(**given).last_hidden_state
        assert reads.calls == []
        with torch.no_grad():
            torch.testing.assert_close(ours, model(input_ids=ids, attention_mask=mask).last_hidden_state, rtol=0, atol=1e-6)
    # no host lengths (a batch padded to a CUDA graph's fixed shape): the mask, whatever the rows
    assert model_inputs(_bert(), {"input_ids": ids, "attention_mask": mask}, "cuda")["attention_mask"].dim() == 4


@pytest.mark.parametrize(("folder", "options"), [
    ("tiny_bert_dir", {}), ("tiny_llama_dir", {}),
    ("tiny_llama_dir", {"bidirectional_last": 1}),  # BeLLM's layers read which keys are padding from the 4D mask
    ("tiny_llama_dir", {"bidirectional_last": 2, "bidirectional_mode": "mask"}),
    ("tiny_llama_dir", {"bidirectional_last": 1, "bidirectional_mode": "billm"}),
])
def test_the_encoder_hands_its_model_the_prepared_mask_on_cuda(folder, options, request):
    enc = embench.load_model(request.getfixturevalue(folder), device="cpu", **options)
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
