"""The masks a decoder layer gets once its causal mask is removed (BeLLM Eq. 4): real keys only, or every key.

Which keys are padding is read from the 4-D mask the layer was given (bool for SDPA, additive float for
eager), never from state kept between calls.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from typing import Any

import torch

from ..core.errors import EmbenchError
from .varlen_attention import NAME as VARLEN

SUPPORTED_ATTENTION = ("eager", "sdpa")


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
    Padded queries see the real keys too, so no row is empty (an empty row gives NaN under SDPA).
    With ``keys`` all True it is the all-zero additive mask of AnglE's and billm's code."""
    allowed = keys[:, None, None, :].expand(keys.shape[0], 1, queries, keys.shape[1])
    if dtype == torch.bool:
        return allowed
    float_dtype = like.dtype if like is not None and like.dtype != torch.bool else dtype
    zero = torch.zeros((), dtype=float_dtype, device=keys.device)
    return torch.where(allowed, zero, torch.tensor(torch.finfo(float_dtype).min, dtype=float_dtype, device=keys.device))


def attention_kind(config: Any, hidden: torch.Tensor) -> torch.dtype:
    """The mask dtype the model's attention takes now: bool for SDPA, the states' float for eager.
    Read at each call: analyses switch a model from SDPA to eager to get attention weights."""
    attention = getattr(config, "_attn_implementation", None) or "eager"
    if attention == VARLEN:  # SDPA for a padded batch (varlen_attention.py)
        return torch.bool
    if attention not in SUPPORTED_ATTENTION:
        raise EmbenchError(f"bidirectional layers are built for {' and '.join(SUPPORTED_ATTENTION)} attention; "
                           f"the model now uses {attention}")
    return torch.bool if attention == "sdpa" else hidden.dtype


@functools.cache
def positional_names(layer_type: type) -> tuple[str, ...]:
    """The names of a layer's ``forward`` arguments that can be given by position, after the hidden states: what a
    hook's ``args[1:]`` hold. GPT-2's model hands each block its cache, mask and encoder states by position (for
    gradient checkpointing); Llama, Qwen and Mistral hand everything but the states by keyword."""
    params = list(inspect.signature(layer_type.forward).parameters.values())[2:]  # self, hidden states
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(p.name for p in itertools.takewhile(lambda p: p.kind in kinds, params))


def opened(layer: torch.nn.Module, args: tuple, kwargs: dict[str, Any], hidden: torch.Tensor, config: Any,
           padding: bool) -> tuple[tuple, dict[str, Any]]:
    """A layer call's arguments (``args`` with the hidden states first) without the causal mask: :func:`open_mask`'s
    mask where the mask was given, by position or by keyword (given again by keyword, a mask passed by position
    would be two values of one argument), or for a packed row (``cu_seq_lens_q``: ``unpadded_batch.py``)
    variable-length attention that is not causal within each text (a packed row has no padding to mask or attend)."""
    if "cu_seq_lens_q" in kwargs:
        return args, {**kwargs, "is_causal": False}
    names = positional_names(type(layer))
    at = names.index("attention_mask") + 1 if "attention_mask" in names else len(args)
    if at < len(args):
        return (*args[:at], open_mask(args[at], hidden, config, padding), *args[at + 1:]), kwargs
    return args, {**kwargs, "attention_mask": open_mask(kwargs.get("attention_mask"), hidden, config, padding)}


def open_mask(mask: torch.Tensor | None, hidden: torch.Tensor, config: Any, padding: bool) -> torch.Tensor:
    """The mask a layer without the causal mask gets: real keys only (``padding``: masked), or every key.
    Never None: SDPA given no mask would apply its own causal one."""
    keys = key_padding(mask, hidden) if padding else torch.ones(hidden.shape[:2], dtype=torch.bool, device=hidden.device)
    return padding_only_mask(keys, mask, hidden.shape[1], attention_kind(config, hidden))
