"""Bidirectional attention in the last K decoder layers of a causal LM (BeLLM, Li & Li 2024, Eq. 4).

BeLLM removes the causal mask ``M`` of Eq. 2-3 in the last layer only; the layers below stay causal
so the prompt's "representative word" is still predicted. ``make_bidirectional(model, k)`` does this
for any ``transformers`` causal LM whose decoder layers take an ``attention_mask`` keyword (Llama,
Mistral, Qwen, ...), with eager or SDPA attention, by replacing the mask each of the last K layers
receives with a padding-only mask: every real token sees every real token, and padding is never
attended (the authors' BiLLM route zeroes the whole mask and so lets real tokens attend to padding,
WhereIsAI/BiLLM issue 6).

Which keys are padding is read from the mask the layer was given, not from state kept between calls,
so the hook is right under gradient checkpointing (where a layer is run again during backward) and
when several batches go forward before one backward (the anchor, positive and negative of a
contrastive step). A causal mask with padding allows key ``j`` in row ``j`` when ``j`` is real and in
no row when it is padding; the last row allows every real key (left or right padding alike).
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.errors import EmbenchError
from .layer_stack import transformer_layers

SUPPORTED_ATTENTION = ("eager", "sdpa")
HOOK_ATTR = "_embench_bidirectional"


def key_padding(mask: torch.Tensor | None, hidden: torch.Tensor) -> torch.Tensor:
    """B x S bool, True for real keys, from the 4-D mask a decoder layer receives (bool for SDPA,
    additive float for eager; None means no padding)."""
    batch, length = hidden.shape[:2]
    if mask is None:
        return torch.ones(batch, length, dtype=torch.bool, device=hidden.device)
    if mask.dim() != 4:
        raise EmbenchError(f"bidirectional layers need a 4-D attention mask (eager or SDPA attention), got {mask.dim()}-D")
    allowed = mask[:, 0] if mask.dtype == torch.bool else mask[:, 0] > torch.finfo(mask.dtype).min / 2  # B x T x S
    last_row = allowed[:, -1, :]
    if allowed.shape[-1] != allowed.shape[-2]:  # a cache in front of the queries: only the last row tells
        return last_row
    # the diagonal covers sliding windows (the last row may not reach early keys); rows that allow every
    # key are skipped there, since older SDPA paths unmask fully padded rows
    own = allowed.diagonal(dim1=-2, dim2=-1) & ~allowed.all(-1)
    return last_row | own


def padding_only_mask(keys: torch.Tensor, like: torch.Tensor | None, queries: int, dtype: torch.dtype) -> torch.Tensor:
    """The B x 1 x T x S mask with no causal part (Eq. 4): every query sees every real key, never padding.
    Padded queries see the real keys too, so no row is empty (an empty row gives NaN under SDPA)."""
    allowed = keys[:, None, None, :].expand(keys.shape[0], 1, queries, keys.shape[1])
    if dtype == torch.bool:
        return allowed
    float_dtype = like.dtype if like is not None and like.dtype != torch.bool else dtype
    zero = torch.zeros((), dtype=float_dtype, device=keys.device)
    return torch.where(allowed, zero, torch.tensor(torch.finfo(float_dtype).min, dtype=float_dtype, device=keys.device))


def _hook(config: Any):
    def pre_hook(module: torch.nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        hidden = args[0] if args else kwargs["hidden_states"]
        mask = kwargs.get("attention_mask")
        keys = key_padding(mask, hidden)
        # read at each call: analyses switch a model from SDPA to eager to get attention weights
        attention = getattr(config, "_attn_implementation", None) or "eager"
        if attention not in SUPPORTED_ATTENTION:
            raise EmbenchError(f"bidirectional layers are built for {' and '.join(SUPPORTED_ATTENTION)} attention; "
                               f"the model now uses {attention}")
        kind = torch.bool if attention == "sdpa" else hidden.dtype
        kwargs["attention_mask"] = padding_only_mask(keys, mask, hidden.shape[1], kind)
        return args, kwargs

    return pre_hook


def check_bidirectional(last: int | None, config: Any, family_causal: bool, model_name: str) -> int:
    """``--bidirectional-last`` checked against a model's config before its weights are read."""
    if not last:
        if last is not None and last < 0:
            raise EmbenchError(f"--bidirectional-last must be 0 or more, got {last}")
        return 0
    from .families import num_layers

    if last < 0:
        raise EmbenchError(f"--bidirectional-last must be 0 or more, got {last}")
    if not family_causal:
        raise EmbenchError(f"--bidirectional-last {last}: {model_name} is not a decoder LLM (its attention is already "
                           "bidirectional); the option is for causal LMs (Llama, Mistral, Qwen, GGUF files, ...)")
    layers = num_layers(config)
    if last > layers:
        raise EmbenchError(f"--bidirectional-last {last} is more than the {layers} layers of {model_name}")
    attention = getattr(config, "_attn_implementation", None)
    if attention not in (None, *SUPPORTED_ATTENTION):
        raise EmbenchError(f"--bidirectional-last: {model_name} uses {attention} attention; bidirectional layers are "
                           f"built for {' and '.join(SUPPORTED_ATTENTION)} (load it with one of them)")
    return last


def make_bidirectional(model: torch.nn.Module, last: int) -> torch.nn.Module:
    """Make the last ``last`` decoder layers of ``model`` attend in both directions (padding stays masked).

    ``last = 0`` leaves the model as it is; ``last = number of layers`` makes every layer bidirectional.
    Applying it again replaces the earlier setting."""
    layers = transformer_layers(model)
    if not 0 <= last <= len(layers):
        raise EmbenchError(f"--bidirectional-last {last}: the model has {len(layers)} layers")
    attention = getattr(model.config, "_attn_implementation", None) or "eager"
    if attention not in SUPPORTED_ATTENTION:
        raise EmbenchError(f"bidirectional layers are built for {' and '.join(SUPPORTED_ATTENTION)} attention; "
                           f"this model uses {attention}")
    for layer in layers:
        handle = getattr(layer, HOOK_ATTR, None)
        if handle is not None:
            handle.remove()
            delattr(layer, HOOK_ATTR)
    for layer in list(layers)[len(layers) - last:] if last else []:
        setattr(layer, HOOK_ATTR, layer.register_forward_pre_hook(_hook(model.config), with_kwargs=True))
    return model


def bidirectional_layers(model: torch.nn.Module) -> list[int]:
    """Indices (from 0) of the decoder layers made bidirectional."""
    layers = transformer_layers(model)
    return [i for i, layer in enumerate(layers) if getattr(layer, HOOK_ATTR, None) is not None]
