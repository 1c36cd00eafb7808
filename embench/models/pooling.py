"""Poolers: how token states become one sentence vector.

Names follow SimCSE's evaluation code where it has them (``docs/PROTOCOLS.md``):

* ``cls``: the chosen layer's first token through the model's pooler head (dense + tanh) where the
  model has one, as the model cut at that layer gives it; without a head it is ``cls_before_pooler``.
* ``cls_before_pooler``: the first token of the chosen layer, no head.
* ``mean``: attention-mask weighted mean of the chosen layer.
* ``max``: element-wise max over real tokens (sentence-transformers' ``max``).
* ``first_last_avg``: mean over tokens of (layer 1 + last layer) / 2 (SimCSE's ``avg_first_last``,
  which indexes ``hidden_states[1]``: the first transformer layer).
* ``embed_last_avg``: mean over tokens of (embedding output + last layer) / 2 (BERT-flow and
  BERT-whitening's first-last average, which indexes the embedding output).
* ``last_token``: the state of the last real token, for left or right padding (decoder LLMs).
* ``weighted_mean``: the position-weighted mean pooling of SGPT (Muennighoff, 2022, "SGPT: GPT Sentence
  Embeddings for Semantic Search"), sentence-transformers' ``weightedmean``: the i-th real token weighs i,
  counted from the first real token (left padding too).

Which states a pooler gets: every layer's (``PoolInput.hidden_states`` as documented), unless it declares that it
reads the chosen layer alone (:func:`chosen_layer_only`, or ``function.all_layers = False``): at the last layer the
model is then asked for that layer's states only, the others are ``None``. A pooler registered from outside embench
(``POOLERS.add``, an ``embench.poolers`` plug-in) that says nothing gets every layer; one that declares the chosen
layer alone and reads another is an error naming it (:func:`pooled_by`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from ..core.errors import EmbenchError
from .poolers import POOLERS, needs_all_layers  # noqa: F401  (the registry of the functions below)


@dataclass(frozen=True)
class PoolInput:
    """What a pooler may look at for one batch."""

    hidden_states: tuple[torch.Tensor, ...]  # (embedding output, layer 1, ..., layer L), each B x T x H
    attention_mask: torch.Tensor  # B x T, 1 for real tokens
    layer: int  # the chosen layer, already made non-negative
    pooler_head: Callable[[torch.Tensor], torch.Tensor] | None  # model's dense+tanh head (B x T x H -> B x H)


Pooler = Callable[[PoolInput], torch.Tensor]


def chosen_layer_only(pooler: Pooler) -> Pooler:
    """Declare that ``pooler`` reads ``hidden_states[layer]`` alone (``all_layers = False``): at the last layer the model
    keeps no other layer's states for it. Without it a pooler gets every layer's (:func:`poolers.needs_all_layers`)."""
    pooler.all_layers = False  # type: ignore[attr-defined]
    return pooler


def masked_mean(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m = mask.unsqueeze(-1).to(states.dtype)
    return (states * m).sum(1) / m.sum(1).clamp(min=1e-9)


def first_real_token(x: PoolInput) -> torch.Tensor:
    """Each row's first real token at the chosen layer (B x H): column 0 under right padding, and under a decoder's
    left padding the first column its mask keeps (column 0 there is padding in every text but the longest, so the
    vector would change with the batch). ``argmax`` gives the first maximal index, on the device."""
    states = x.hidden_states[x.layer]
    first = x.attention_mask.long().argmax(1)
    return states[torch.arange(states.shape[0], device=states.device), first]


@chosen_layer_only
def pool_cls(x: PoolInput) -> torch.Tensor:
    # at every layer, as a model with the layers above removed has it: a curve over layers (layer-removal, layers)
    # took the head at the last point only, one representation beside another
    first = first_real_token(x)
    if x.pooler_head is not None:
        return x.pooler_head(first.unsqueeze(1))  # BERT-style heads take a sequence and read its first token
    return first


@chosen_layer_only
def pool_cls_before_pooler(x: PoolInput) -> torch.Tensor:
    return first_real_token(x)


@chosen_layer_only
def pool_mean(x: PoolInput) -> torch.Tensor:
    return masked_mean(x.hidden_states[x.layer], x.attention_mask)


@chosen_layer_only
def pool_max(x: PoolInput) -> torch.Tensor:
    states = x.hidden_states[x.layer]
    fill = torch.finfo(states.dtype).min
    return states.masked_fill(x.attention_mask.unsqueeze(-1) == 0, fill).max(1).values


def pool_first_last_avg(x: PoolInput) -> torch.Tensor:
    hs = x.hidden_states
    return masked_mean((hs[1] + hs[-1]) / 2.0, x.attention_mask)


def pool_embed_last_avg(x: PoolInput) -> torch.Tensor:
    hs = x.hidden_states
    return masked_mean((hs[0] + hs[-1]) / 2.0, x.attention_mask)


@chosen_layer_only
def pool_last_token(x: PoolInput) -> torch.Tensor:
    states, mask = x.hidden_states[x.layer], x.attention_mask
    # the position of each row's last real token, for left padding, right padding or none alike: found on
    # the device, without asking the host which padding this is (a GPU would wait for that answer)
    positions = torch.arange(mask.shape[1], device=mask.device)
    last = (mask.long() * positions).argmax(1)
    return states[torch.arange(states.shape[0], device=states.device), last]


@chosen_layer_only
def pool_weighted_mean(x: PoolInput) -> torch.Tensor:
    states, mask = x.hidden_states[x.layer], x.attention_mask
    # weights 1, 2, ... from each row's first real token, so that left padding shifts nothing (as
    # sentence-transformers' Pooling does); summed in fp32 when the states are bf16 or fp16
    dtype = torch.float32 if states.dtype in (torch.bfloat16, torch.float16) else states.dtype
    positions = torch.arange(1, mask.shape[1] + 1, device=mask.device, dtype=dtype)
    first = mask.long().argmax(1, keepdim=True)
    weights = ((positions - first) * mask.to(dtype)).unsqueeze(-1)
    return ((states * weights).sum(1) / weights.sum(1).clamp(min=1e-9)).to(states.dtype)


def pooled_by(pooler: Pooler, x: PoolInput, name: str) -> torch.Tensor:
    """``pooler(x)``, checked (:func:`checked_pooled`). A pooler that declared the chosen layer alone
    (:func:`chosen_layer_only`) and reads another finds ``None`` there: an error naming it, not an AttributeError."""
    try:
        pooled = pooler(x)
    except (AttributeError, TypeError) as e:
        if all(h is not None for h in x.hidden_states):
            raise
        raise EmbenchError(f"pooler {name!r} read a layer it was not given ({type(e).__name__}: {e}): it declares that "
                           f"it reads the chosen layer alone (all_layers = False), so the model gave layer {x.layer} "
                           "only; drop that declaration and it gets every layer") from None
    return checked_pooled(pooled, name, len(x.attention_mask))


def checked_pooled(pooled: Any, name: str, rows: int) -> torch.Tensor:
    """A pooler's output when it is one vector per text, ``(rows, dim)``; else an error naming the pooler (a plug-in's
    pooler returning ``(rows,)`` failed in numpy once the whole pass was encoded). Shapes only: no device read."""
    if not isinstance(pooled, torch.Tensor) or pooled.dim() != 2 or pooled.shape[0] != rows:
        got = tuple(pooled.shape) if isinstance(pooled, torch.Tensor) else type(pooled).__name__
        raise EmbenchError(f"pooler {name!r} returned {got}; a pooler returns one vector per text, a tensor of shape "
                           f"(texts, dim) = ({rows}, dim)")
    return pooled
