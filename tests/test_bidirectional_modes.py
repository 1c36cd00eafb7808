"""The four readings of BeLLM's bidirectional last layers (``--bidirectional-mode``), each against the layers run by
hand with explicit masks: ``sum`` (Eq. 5 as the paper writes it), ``sum-code`` (the authors' AnglE code), ``mask``
(one stack, padding masked) and ``billm`` (one stack, padding attended)."""

from __future__ import annotations

import pytest
import torch

from embench.core.errors import EmbenchError
from embench.models.bidirectional import (
    MODES,
    bidirectional_layers,
    bidirectional_setting,
    make_bidirectional,
    settle_bidirectional,
)

MIN = torch.finfo(torch.float32).min
IDS = torch.tensor([[0, 0, 5, 9, 3, 7], [4, 8, 2, 6, 11, 13]])
LEFT = torch.tensor([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]])  # row 0 padded on the left
FULL = torch.ones_like(LEFT)


def tiny_llama(attention: str = "eager", layers: int = 3):
    from transformers import LlamaConfig, LlamaModel

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=layers, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=64)
    return LlamaModel._from_config(cfg, attn_implementation=attention).eval()


def additive(allowed: torch.Tensor) -> torch.Tensor:
    """B x T x S allowed -> the B x 1 x T x S additive mask eager attention takes."""
    return torch.where(allowed, 0.0, MIN)[:, None]


def causal_allowed(mask2d: torch.Tensor) -> torch.Tensor:
    t = mask2d.shape[1]
    return torch.tril(torch.ones(t, t, dtype=torch.bool))[None] & mask2d.bool()[:, None, :]


def padding_allowed(mask2d: torch.Tensor) -> torch.Tensor:
    return mask2d.bool()[:, None, :].expand(-1, mask2d.shape[1], -1)


def by_hand(model, mode: str, k: int, mask2d: torch.Tensor) -> torch.Tensor:
    """The mode's output computed layer by layer with masks written here. The causal states come from the
    untouched model (``hidden_states[i]`` is the input of layer i + 1); every bidirectional layer, and the
    causal last layer the paper's sum needs before its norm, is run here with its mask."""
    n = len(model.layers)
    with torch.no_grad():
        states = model(input_ids=IDS, attention_mask=mask2d, output_hidden_states=True).hidden_states
        x = states[0]
        rotary = model.rotary_emb(x, position_ids=torch.arange(x.shape[1])[None])

        def run(h: torch.Tensor, first: int, allowed: torch.Tensor) -> torch.Tensor:
            for layer in model.layers[first:]:
                h = layer(h, attention_mask=additive(allowed), position_embeddings=rotary)
            return h

        if mode == "mask":  # one stack: causal layers 1..n-k, then no causal mask, padding masked
            return model.norm(run(states[n - k], n - k, padding_allowed(mask2d)))
        if mode == "billm":  # one stack: the last k layers with an all-zero mask (padding attended)
            return model.norm(run(states[n - k], n - k, torch.ones_like(padding_allowed(mask2d))))
        branch_allowed = padding_allowed(mask2d) if mode == "sum" else torch.ones_like(padding_allowed(mask2d))
        branch = run(x, n - k, branch_allowed)  # the last k layers again, on the embedding output
        if mode == "sum":  # Eq. 5: LLM^{1:n}(x) + BiLLM(x); the causal last layer run here too, before the norm
            return model.norm(run(states[n - 1], n - 1, causal_allowed(mask2d)) + branch)
        return model.norm((states[n - k] if k < n else 0) + branch)  # sum-code: causal 1..n-k + the branch


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("mode", list(MODES))
def test_each_mode_equals_its_hand_computation(mode, k, one_thread):
    model, reference = tiny_llama(), tiny_llama()
    make_bidirectional(model, k, mode)
    assert bidirectional_layers(model) == list(range(3 - k, 3)) and bidirectional_setting(model).mode == mode
    with torch.no_grad():
        got = model(input_ids=IDS, attention_mask=LEFT).last_hidden_state
    want = by_hand(reference, mode, k, LEFT)
    real = LEFT.bool()  # pad rows of the paper's sum and of mask hold what the causal model's pad rows hold
    rows = torch.ones_like(real) if mode in ("billm", "sum-code") else real
    torch.testing.assert_close(got[rows], want[rows], atol=1e-5, rtol=1e-5)


def test_one_bidirectional_layer_changes_the_last_token_only_in_the_modes_that_read_eq5_or_padding(one_thread):
    """The issue's observation as a test: with last-token pooling, K = 1 in one stack with padding masked (mask) is
    the causal model exactly (the last token sees every token already); Eq. 5's sum is not."""
    causal = tiny_llama()
    with torch.no_grad():
        base = causal(input_ids=IDS, attention_mask=LEFT).last_hidden_state[:, -1]
        unpadded = causal(input_ids=IDS, attention_mask=FULL).last_hidden_state[:, -1]
    last = {}
    for mode in MODES:
        model = make_bidirectional(tiny_llama(), 1, mode)
        with torch.no_grad():
            last[mode] = model(input_ids=IDS, attention_mask=LEFT).last_hidden_state[:, -1]
            last[mode, "unpadded"] = model(input_ids=IDS, attention_mask=FULL).last_hidden_state[:, -1]
    assert torch.equal(last["mask"], base) and torch.equal(last["mask", "unpadded"], unpadded)
    for mode in ("sum", "sum-code"):
        assert (last[mode] - base).abs().max() > 0.1 and (last[mode, "unpadded"] - unpadded).abs().max() > 0.1
    # billm differs from mask only through padding: equal on an unpadded batch and on the unpadded row
    assert torch.equal(last["billm", "unpadded"], last["mask", "unpadded"]) and torch.equal(last["billm"][1], base[1])
    assert (last["billm"][0] - base[0]).abs().max() > 0.1  # the padded row's last token now attends its pads
    assert (last["sum"] - last["sum-code"]).abs().max() > 0.1  # the paper's causal term runs through layer n


@pytest.mark.parametrize("mode", list(MODES))
def test_eager_and_sdpa_agree_on_real_tokens(mode, one_thread):
    """SDPA takes a bool mask, eager an additive one. The unmasked modes read the causal pass's pad rows, which
    the two attentions leave differently (a query with no key to see), so they are compared unpadded."""
    mask2d = FULL if mode in ("billm", "sum-code") else LEFT
    out = {}
    for attention in ("eager", "sdpa"):
        model = make_bidirectional(tiny_llama(attention), 2, mode)
        with torch.no_grad():
            out[attention] = model(input_ids=IDS, attention_mask=mask2d).last_hidden_state[mask2d.bool()]
    torch.testing.assert_close(out["eager"], out["sdpa"], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("mode", ["sum", "sum-code"])
def test_the_sum_modes_return_the_causal_states_and_attention_maps_and_the_normed_sum_last(mode, one_thread):
    model, causal = make_bidirectional(tiny_llama(), 1, mode), tiny_llama()
    with torch.no_grad():
        got = model(input_ids=IDS, attention_mask=LEFT, output_hidden_states=True, output_attentions=True)
        want = causal(input_ids=IDS, attention_mask=LEFT, output_hidden_states=True, output_attentions=True)
    assert len(got.hidden_states) == 4 and len(got.attentions) == 3  # the branch's layer calls are not recorded
    assert torch.equal(got.hidden_states[-1], got.last_hidden_state)
    for i in range(3):
        assert torch.equal(got.hidden_states[i], want.hidden_states[i]) and torch.equal(got.attentions[i], want.attentions[i])
    assert not torch.allclose(got.last_hidden_state, want.last_hidden_state, atol=1e-3)
    # the final norm called on its own (a layer view's) passes through: nothing is kept between passes
    h = torch.randn(2, 6, 32)
    assert torch.equal(model.norm(h), causal.norm(h))


@pytest.mark.parametrize("mode", ["sum", "sum-code", "billm"])
def test_gradients_are_the_same_with_checkpointing_and_two_passes_before_one_backward(mode, one_thread):
    """The branch keeps a pass's inputs only from its first layer to its norm: recomputed layers (activation
    checkpointing) and a second pass before the backward (a contrastive step's views) read nothing stale."""
    grads = []
    for checkpointing in (False, True):
        model = make_bidirectional(tiny_llama("sdpa").train(), 1, mode)
        if checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        a = model(input_ids=IDS, attention_mask=LEFT).last_hidden_state[:, -1]
        b = model(input_ids=IDS[:, 2:]).last_hidden_state[:, -1]
        (a.pow(2).sum() + a[:, :4].sum() * b.sum()).backward()
        grads.append({name: p.grad for name, p in model.named_parameters()})
    assert all(g is not None for g in grads[0].values())  # every layer's weights are used, the last one twice
    for name, g in grads[0].items():
        torch.testing.assert_close(grads[1][name], g, atol=1e-6, rtol=1e-5)


def test_settings_saved_with_a_checkpoint_win_unless_given():
    from transformers import LlamaConfig

    cfg = LlamaConfig(num_hidden_layers=3)
    settle = lambda last, mode, saved: settle_bidirectional(last, mode, saved, cfg, True, "m")  # noqa: E731
    assert settle(1, None, []) == settle(1, "SUM", []) and settle(1, None, []).mode == "sum"
    assert settle(None, None, [(None, None), (2, "billm")]).extra() == {"bidirectional_last": 2, "bidirectional_mode": "billm"}
    # a folder saved before the modes existed (K, no mode) was trained as one stack with padding masked
    assert settle(None, None, [(1, None)]).mode == "mask" and settle(None, "sum", [(1, None)]).mode == "sum"
    assert settle(2, None, [(1, "sum-code")]).extra() == {"bidirectional_last": 2, "bidirectional_mode": "sum-code"}
    assert settle(None, None, []).extra() == {} and settle(0, None, [(1, "sum")]).extra() == {}
    with pytest.raises(EmbenchError, match="needs --bidirectional-last K"):
        settle(0, "sum", [])


def test_a_model_without_a_final_norm_cannot_take_the_sum():
    model = tiny_llama()
    model.norm = None
    with pytest.raises(EmbenchError, match="has none \\(use --bidirectional-mode mask or billm\\)"):
        make_bidirectional(model, 1, "sum")
    make_bidirectional(model, 1, "billm")  # the stack modes need no norm
    with pytest.raises(EmbenchError, match="choose one of sum, sum-code, mask, billm"):
        make_bidirectional(model, 1, "both")
