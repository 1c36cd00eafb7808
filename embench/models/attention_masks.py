"""A model's attention mask handed to it ready-made on a GPU, so that its forward never waits for the GPU.

Before each forward, transformers turns the 2D padding mask into SDPA's 4D one (``masking_utils.sdpa_mask``) and first
asks whether any token is padding at all (``_ignore_bidirectional_mask_sdpa`` for an encoder, ``_ignore_causal_mask_sdpa``
twice for a decoder: ``padding_mask.all()`` in a Python ``if``). On CUDA each such read makes the host wait for every
kernel queued before it: the engine can never queue one batch ahead of the GPU, and any pause of the host (tokenising
the next chunk, handing vectors back) leaves the GPU idle. transformers returns a 4D mask as it is given
(``_preprocess_mask_arguments``), so here the mask it would build is built without reading it:

- an encoder: ``mask[b, 0, q, k] = padding[b, k]``, a boolean view expanded over the queries, the tensor ``sdpa_mask``
  makes for a batch with padding (``bidirectional_mask_function`` and ``padding_mask_function``);
- a decoder: ``mask[b, 0, q, k] = k <= q and padding[b, k]`` (``causal_mask_function`` and ``padding_mask_function``,
  with no cache: query and key positions are the same).

An encoder's batch without padding gets no mask, as transformers would give it (then SDPA runs its flash kernel): the
host knows it from the rows' lengths, which ``fast_tokens.pad_rows`` keeps beside the batch. A batch padded to a fixed
shape (a CUDA graph's, replayed for other rows) has no such lengths and always gets the mask. A decoder's batch without
padding gets the causal mask all the same: given no mask, transformers reads the position ids back to look for packed
sequences (``find_packed_sequence_indices``), a wait as long as the one avoided; with the mask SDPA runs its
memory-efficient kernel instead of the causal flash one, equal to rounding.

Only where that is the mask transformers would make: SDPA attention, no encoder-decoder; an encoder whose modelling
code builds its mask with ``create_bidirectional_mask`` and has no sliding-window layers (ModernBERT's local attention
needs masks of its own); a decoder whose code builds it with ``create_causal_mask`` and whose config asks for no
sliding window, chunked attention or layer of another type. On a CPU nothing changes: reading a value there costs
nothing, and CPU vectors stay those of transformers' own path bit for bit.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import torch

from .families import is_decoder
from .positions import position_ids, takes_position_ids
from .varlen_attention import NAME


def prepared_mask_kind(model: torch.nn.Module) -> str | None:
    """``"bidirectional"`` or ``"causal"``: the 4D mask the model's own code would make of a 2D padding mask, which
    :func:`prepared_mask` builds; None where it would make another (or none is built here). A LoRA-wrapped model
    (peft) is looked at through its base model, whose code builds the mask."""
    model = model.get_base_model() if hasattr(model, "get_base_model") else model
    config = getattr(model, "config", None)
    if config is None or getattr(config, "_attn_implementation", None) not in ("sdpa", NAME):  # NAME: SDPA when padded
        return None
    if getattr(config, "is_encoder_decoder", False):
        return None
    if not is_decoder(config):
        return "bidirectional" if _plain_code(type(model).__module__, "create_bidirectional_mask") else None
    full = all(t == "full_attention" for t in getattr(config, "layer_types", None) or ["full_attention"])
    windows = getattr(config, "sliding_window", None) is not None or getattr(config, "attention_chunk_size", None) is not None
    return "causal" if full and not windows and _plain_code(type(model).__module__, "create_causal_mask", sliding_ok=True) else None


def takes_prepared_mask(model: torch.nn.Module) -> bool:
    """True where the model's own code would turn a 2D padding mask into the 4D one :func:`prepared_mask` builds."""
    return prepared_mask_kind(model) is not None


@functools.cache
def _plain_code(module_name: str, builder: str, sliding_ok: bool = False) -> bool:
    """Whether a modelling module builds its masks with ``builder``, and (unless ``sliding_ok``: a decoder's config
    says whether its sliding-window layers are on) has no sliding windows: looked up once per module."""
    code = sys.modules.get(module_name)
    return code is not None and hasattr(code, builder) and (sliding_ok or not any("sliding" in name for name in vars(code)))


def prepared_mask(attention_mask: torch.Tensor, kind: str = "bidirectional") -> torch.Tensor:
    """SDPA's boolean mask ``(batch, 1, length, length)`` of a 2D padding mask, without reading its values."""
    rows, width = attention_mask.shape
    keys = attention_mask.bool()[:, None, None, :]
    if kind == "causal":  # key k is seen from query q when k <= q (no cache: the same positions)
        return keys & torch.ones(width, width, dtype=torch.bool, device=attention_mask.device).tril()
    return keys.expand(rows, 1, width, width)


def waits_for_reads(device: str) -> bool:
    """Whether reading a value on ``device`` makes the host wait for it (CUDA), so that the mask goes ready-made."""
    return str(device).startswith("cuda")


def model_inputs(model: torch.nn.Module, enc: dict[str, Any], device: str) -> dict[str, Any]:
    """``enc`` as the model should get it: without the host's row lengths (``pad_rows``); a decoder with position ids
    counted from each text's first real token (``positions.py``: left padding moves no text's positions); and on CUDA
    with the prepared mask where the model takes one, or no mask where the lengths say that no row is padded."""
    lengths = enc.get("lengths")
    enc = {k: v for k, v in enc.items() if k != "lengths"}
    if enc.get("attention_mask") is not None and "position_ids" not in enc and takes_position_ids(model):
        # from the 2D mask, before it becomes 4D; a decoder keeps its mask, so transformers never reads these ids
        # back to look for packed sequences (which it does only where no mask is given)
        enc["position_ids"] = position_ids(enc["attention_mask"])
    kind = prepared_mask_kind(model) if waits_for_reads(device) and "attention_mask" in enc else None
    if kind is None:
        return enc
    if kind == "bidirectional" and lengths is not None and len(lengths) and lengths.numpy().min() == enc["attention_mask"].shape[1]:
        return {**enc, "attention_mask": None}  # what transformers gives a batch without padding: SDPA's flash kernel
    return {**enc, "attention_mask": prepared_mask(enc["attention_mask"], kind)}
