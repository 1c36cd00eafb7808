"""An encoder's attention mask handed to the model ready-made on a GPU, so that its forward never waits for the GPU.

Before each forward, transformers turns the 2D padding mask into SDPA's 4D one (``masking_utils.sdpa_mask``) and first
asks whether any token is padding at all (``_ignore_bidirectional_mask_sdpa``: ``padding_mask.all()`` in a Python
``if``). On CUDA that reads a value back from the device, so the host waits for every kernel queued before it: the
engine can never queue one batch ahead of the GPU, and any pause of the host (tokenising the next chunk, handing
vectors back) leaves the GPU idle. transformers returns a 4D mask as it is given (``_preprocess_mask_arguments``), so
here the mask it would build is built without reading it: ``mask[b, 0, q, k] = padding[b, k]``, a boolean view
expanded over the queries, which is the tensor ``sdpa_mask`` makes for a batch with padding
(``bidirectional_mask_function`` and ``padding_mask_function``, expanded to ``(batch, 1, q, kv)``). A batch without
padding, where transformers would pass no mask, gets the all-true mask: the same attention, through SDPA's
memory-efficient kernel instead of flash (equal to rounding).

Only where that is the mask transformers would make: an encoder (bidirectional; no decoder, no encoder-decoder)
under SDPA attention whose modelling code builds its mask with ``create_bidirectional_mask`` and has no sliding-window
layers (ModernBERT's local attention needs masks of its own). On a CPU nothing changes: reading a value there costs
nothing, and CPU vectors stay those of transformers' own path bit for bit.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import torch

from .families import is_decoder
from .varlen_attention import NAME


def takes_prepared_mask(model: torch.nn.Module) -> bool:
    """True where the model's own code would turn a 2D padding mask into the 4D one :func:`prepared_mask` builds."""
    config = getattr(model, "config", None)
    if config is None or getattr(config, "_attn_implementation", None) not in ("sdpa", NAME):  # NAME: SDPA when padded
        return False
    if is_decoder(config) or getattr(config, "is_encoder_decoder", False):
        return False
    return _plain_bidirectional_code(type(model).__module__)


@functools.cache
def _plain_bidirectional_code(module_name: str) -> bool:
    """Whether a modelling module builds its masks with ``create_bidirectional_mask`` alone (no sliding windows):
    looked up once per module, not on every forward."""
    code = sys.modules.get(module_name)
    return code is not None and hasattr(code, "create_bidirectional_mask") and not any("sliding" in name for name in vars(code))


def prepared_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """SDPA's boolean mask ``(batch, 1, length, length)`` of a 2D padding mask, without reading its values."""
    rows, width = attention_mask.shape
    return attention_mask.bool()[:, None, None, :].expand(rows, 1, width, width)


def waits_for_reads(device: str) -> bool:
    """Whether reading a value on ``device`` makes the host wait for it (CUDA), so that the mask goes ready-made."""
    return str(device).startswith("cuda")


def model_inputs(model: torch.nn.Module, enc: dict[str, Any], device: str) -> dict[str, Any]:
    """``enc`` as the model should get it: without the host's row lengths (``pad_rows(..., lengths=True)``), and on
    CUDA with the prepared mask where the model takes one."""
    enc = {k: v for k, v in enc.items() if k != "lengths"}
    if not waits_for_reads(device) or "attention_mask" not in enc or not takes_prepared_mask(model):
        return enc
    return {**enc, "attention_mask": prepared_mask(enc["attention_mask"])}
