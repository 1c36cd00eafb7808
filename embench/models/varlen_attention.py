"""Attention over a batch run as one unpadded row: each text attends to its own tokens only (variable-length
attention), with no padding computed and no mask.

A padded batch spends every layer's matmuls on its padding, and SDPA cannot use its flash kernel once a padding
mask is given (it falls back to the memory-efficient one, which reads the mask). Run unpadded
(:mod:`.unpadded_batch`), a batch is one row of all its real tokens and the texts' boundaries
(``cu_seq_lens``: cumulative lengths, 0 first). On CUDA in bf16/fp16 the attention is torch's own flash
variable-length kernel (``torch.nn.attention.varlen.varlen_attn``, torch >= 2.10; no flash-attn package needed).
On a CPU it is :func:`reference_attention`: SDPA under the block-diagonal mask those boundaries
define (causal within a text for a decoder), the same arithmetic, which is what the CPU tests compare against
transformers' padded forward.

The function is registered with transformers' ``AttentionInterface`` under :data:`NAME` and chosen for one forward
at a time (:func:`attention_as`): a name transformers' mask builders do not know makes them return no mask
(``masking_utils._preprocess_mask_arguments``), so a forward under it never builds, nor reads, a padding mask.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import torch

NAME = "embench_varlen"


def _find_flash_kernel() -> tuple[Callable | None, frozenset[str]]:
    """torch's flash variable-length attention and the names of its parameters, or (None, empty) where this torch
    has none. Looked up once, at import: the attention function below then reads plain globals, which
    ``torch.compile`` of a layer traces without a break."""
    try:
        from torch.nn.attention.varlen import varlen_attn
    except ImportError:
        return None, frozenset()
    return varlen_attn, frozenset(inspect.signature(varlen_attn).parameters)


FLASH_KERNEL, FLASH_PARAMS = _find_flash_kernel()


def why_not_flash(device: str, dtype: torch.dtype) -> str | None:
    """Why the flash kernel cannot run on ``device`` in ``dtype`` (None: it can)."""
    if not str(device).startswith("cuda"):
        return "variable-length attention needs a CUDA GPU"
    if dtype not in (torch.bfloat16, torch.float16):
        return "the flash kernel computes bf16/fp16 only (fp32 stays padded and exact)"
    if FLASH_KERNEL is None:
        return f"torch {torch.__version__} has no torch.nn.attention.varlen (torch 2.10 or later)"
    if torch.cuda.is_available() and torch.cuda.get_device_capability(torch.device(device)) < (8, 0):
        return "the flash kernel needs an Ampere (sm80) or newer GPU"
    return None


def _flash(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu: torch.Tensor, width: int, causal: bool,
           scale: float | None) -> torch.Tensor:
    """The flash kernel on ``(tokens, heads, dim)`` tensors; its keyword for causality changed across torch releases
    (``is_causal`` first, then ``window_size=(-1, 0)``), and so did its grouped-query switch."""
    kernel, params = FLASH_KERNEL, FLASH_PARAMS
    extra: dict[str, Any] = {"scale": scale} if "scale" in params else {}
    if causal:
        extra.update({"window_size": (-1, 0)} if "window_size" in params else {"is_causal": True})
    if k.shape[1] != q.shape[1]:  # grouped-query attention (Qwen2, Llama 3): keys and values have fewer heads
        if "enable_gqa" in params:
            extra["enable_gqa"] = True
        else:
            k, v = (t.repeat_interleave(q.shape[1] // t.shape[1], dim=1) for t in (k, v))
    return kernel(q, k, v, cu, cu, width, width, **extra)


def reference_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu: torch.Tensor, causal: bool,
                        scale: float | None) -> torch.Tensor:
    """What the flash kernel computes, on any device and dtype: SDPA over the row under the block-diagonal mask of
    the texts' boundaries ``cu`` (and causal inside each text). Memory grows with the square of the row's tokens:
    for tests and CPUs, never chosen for a GPU pass."""
    tokens = q.shape[0]
    text = torch.searchsorted(cu[1:].long(), torch.arange(tokens, device=q.device), right=True)
    allowed = text[:, None] == text[None, :]
    if causal:
        allowed = allowed & torch.ones(tokens, tokens, dtype=torch.bool, device=q.device).tril()
    out = torch.nn.functional.scaled_dot_product_attention(
        q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), attn_mask=allowed, scale=scale,
        enable_gqa=k.shape[1] != q.shape[1])
    return out.transpose(0, 1)


def varlen_attention_forward(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                             attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
                             is_causal: bool | None = None, **kwargs: Any) -> tuple[torch.Tensor, None]:
    """transformers' attention-function contract: ``query`` ``(1, heads, tokens, dim)`` (keys and values with their
    own heads), the batch's boundaries in ``cu_seq_lens_q`` and its longest text in ``max_length_q`` (the names
    transformers' flash path uses); returns ``(1, tokens, heads, dim)`` and no weights."""
    if attention_mask is not None or query.shape[0] != 1 or "cu_seq_lens_q" not in kwargs:
        raise RuntimeError(f"{NAME} attention runs one unpadded row with its texts' boundaries (unpadded_batch.py)")
    if dropout:
        raise RuntimeError(f"{NAME} attention is for encoding: it has no attention dropout")
    causal = bool(is_causal if is_causal is not None else getattr(module, "is_causal", False))
    cu, width = kwargs["cu_seq_lens_q"], int(kwargs["max_length_q"])
    q, k, v = (t[0].transpose(0, 1).contiguous() for t in (query, key, value))  # (tokens, heads, dim); no copy for BERT
    # on a GPU the flash kernel (the loader checked it can run: why_not_flash); elsewhere its reference
    out = _flash(q, k, v, cu, width, causal, scaling) if q.is_cuda else reference_attention(q, k, v, cu, causal, scaling)
    return out.unsqueeze(0), None


@functools.cache
def registered() -> str:
    """Register :func:`varlen_attention_forward` with transformers once; its name."""
    from transformers import AttentionInterface

    AttentionInterface.register(NAME, varlen_attention_forward)
    return NAME


@contextlib.contextmanager
def attention_as(model: torch.nn.Module, name: str) -> Iterator[None]:
    """``model`` attends through the registered function ``name`` for the forwards inside (every layer reads its
    config's ``_attn_implementation`` when it runs), and through its own again afterwards."""
    config = model.config
    own = config._attn_implementation
    config._attn_implementation = name
    try:
        yield
    finally:
        config._attn_implementation = own
