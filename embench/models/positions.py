"""Position ids counted from each text's first real token, as transformers' ``generate`` counts them.

A decoder given no position ids numbers the columns of its batch 0, 1, ... whatever the padding, so under left
padding a text's first real token sits at the number of pad tokens before it. A model with absolute positions
(GPT-2's learned ``wpe``) then gives a text another vector in every batch it is padded in (a shift of the whole
text); a rotary one (Llama, Qwen, Mistral) sees only relative positions and changes by rounding alone. Encoding,
training and generation all hand a decoder ``cumsum(mask) - 1``, padding at 0 (never attended), as
``GenerationMixin._prepare_position_ids_for_generation`` does. Encoders keep what they get: BERT pads on the right,
so its real tokens are numbered from 0 already, and RoBERTa counts its positions from the padding index itself
(even saved as a causal LM: :data:`SELF_COUNTED`).

Vectors a decoder with absolute positions gave under left padding before this change are other vectors: such a
model's settings carry ``positions_per_text`` (:func:`key_positions`), so its cache key and records' identity
differ from the old ones; every other model's keys stay as they were.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import torch

from .families import is_decoder

# config attributes of rotary position embeddings (Llama, Qwen, Mistral, Gemma, GPT-NeoX, Phi, GPT-J, CodeGen, ...)
ROTARY_ATTRIBUTES = ("rope_parameters", "rope_theta", "rope_scaling", "rotary_dim", "rotary_pct", "partial_rotary_factor")
# decoders with absolute positions that already count them from the 2D padding mask themselves (OPT's
# ``OPTLearnedPositionalEmbedding``): the same positions as here, so the same vectors
MASK_COUNTED = ("opt",)
# models that number their positions themselves from the input ids, from padding_idx + 1 (RoBERTa's
# ``create_position_ids_from_input_ids``): a RoBERTa saved as a causal LM (is_decoder) is counted per text already, and
# ids from 0 would shift every vector of it, padded or not (by 1.58 on a tiny one)
SELF_COUNTED = ("roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "roberta-prelayernorm", "data2vec-text", "ibert",
                "longformer", "luke", "markuplm", "mpnet", "esm", "xmod", "lilt", "layoutlmv3")


def position_ids(attention_mask: torch.Tensor) -> torch.Tensor:
    """``(rows, width)`` position ids of a 2D padding mask: each row's real tokens 0, 1, ..., its padding 0."""
    mask = attention_mask.long()
    return (mask.cumsum(-1) - 1).masked_fill(mask == 0, 0)


@functools.cache
def _forward_takes(cls: type) -> bool:
    try:
        return "position_ids" in inspect.signature(cls.forward).parameters
    except (TypeError, ValueError):  # a forward without a readable signature: given nothing new
        return False


def takes_position_ids(model: torch.nn.Module) -> bool:
    """Whether ``model`` is a decoder whose forward takes ``position_ids`` (a peft model: its base model's)."""
    model = model.get_base_model() if hasattr(model, "get_base_model") else model
    config = getattr(model, "config", None)
    return (config is not None and is_decoder(config) and getattr(config, "model_type", "") not in SELF_COUNTED
            and _forward_takes(type(model)))


def absolute_positions(config: Any) -> bool:
    """Whether a decoder's vectors move with its position numbers (no rotary embedding, none counted from the mask)."""
    if any(getattr(config, name, None) for name in ROTARY_ATTRIBUTES):
        return False
    return is_decoder(config) and getattr(config, "model_type", "") not in MASK_COUNTED + SELF_COUNTED


def key_positions(settings: Any, padding_side: str, config: Any) -> None:
    """Into an encoder's settings (its cache key and a record's identity): the family's padding side where it is not
    the right, and ``positions_per_text`` where left padding once moved the positions of an absolute-position decoder
    (GPT-2), so that its vectors from before are not served."""
    if padding_side != "right":
        settings.extra["padding_side"] = padding_side
    if padding_side == "left" and absolute_positions(config):
        settings.extra["positions_per_text"] = True
