"""Attention over a batch run as one unpadded row: each text attends to its own tokens only (variable-length
attention), with no padding computed and no mask.

A padded batch spends every layer's matmuls on its padding, and SDPA cannot use its flash kernel once a padding
mask is given (it falls back to the memory-efficient one, which reads the mask). Run unpadded
(:mod:`.unpadded_batch`), a batch is one row of all its real tokens and the texts' boundaries
(``cu_seq_lens_q``: cumulative lengths, 0 first). On CUDA the attention is torch's own flash variable-length kernel
(``torch.nn.attention.varlen.varlen_attn``, torch >= 2.10; no flash-attn package needed). On a CPU it is
:func:`reference_attention`: SDPA under the block-diagonal mask those boundaries define (causal within a text for a
decoder), the same arithmetic, which is what the CPU tests compare against transformers' padded forward.

A model runs it as its attention implementation :data:`NAME` (:func:`use_varlen`), set once and kept: a layer
recomputed in a backward pass (gradient checkpointing) reads its config's implementation again, so a switch around
the forward alone would recompute it as SDPA over the whole row. Under :data:`NAME` a call without the boundaries (a
padded batch: an evaluation, an analysis) is transformers' own SDPA, with SDPA's masks (the same mask function is
registered), so the model stays what it was for every other caller. A packed row comes with a 1x1x1x1 marker mask,
which transformers' mask builders return as given (a 4-D mask), so none of them looks at the row (a decoder's would
otherwise find the packed texts from the positions, reading them back, and build a tokens x tokens mask).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
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
           scale: float | None, repeat_kv: bool = True) -> torch.Tensor:
    """The flash kernel on ``(tokens, heads, dim)`` tensors; its keyword for causality changed across torch releases
    (``is_causal`` first, then ``window_size=(-1, 0)``), and so did its grouped-query switch. Where it has none
    (torch 2.11), a grouped-query model's key/value heads are repeated to the query's; ``repeat_kv=False`` passes them
    as they are, which aten's flash kernel may take itself (``benchmarks/varlen_check.py`` probes it on a GPU)."""
    kernel, params = FLASH_KERNEL, FLASH_PARAMS
    extra: dict[str, Any] = {"scale": scale} if "scale" in params else {}
    if causal:
        extra.update({"window_size": (-1, 0)} if "window_size" in params else {"is_causal": True})
    if k.shape[1] != q.shape[1]:  # grouped-query attention (Qwen2, Llama 3): keys and values have fewer heads
        if "enable_gqa" in params:
            extra["enable_gqa"] = True
        elif repeat_kv:
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
    """transformers' attention-function contract. A packed row: ``query`` ``(1, heads, tokens, dim)`` (keys and values
    with their own heads), the texts' boundaries in ``cu_seq_lens_q`` and the longest text in ``max_length_q`` (the
    names transformers' flash path uses); returns ``(1, tokens, heads, dim)`` and no weights. ``is_causal`` False
    (BeLLM's bidirectional layers) opens the causal mask within each text. Anything else is transformers' SDPA."""
    if "cu_seq_lens_q" not in kwargs:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      is_causal=is_causal, **kwargs)
    if query.shape[0] != 1:
        raise RuntimeError(f"{NAME} attention runs one unpadded row with its texts' boundaries (unpadded_batch.py)")
    if dropout:
        raise RuntimeError(f"{NAME} attention has no attention dropout: a model that drops attention runs padded")
    causal = bool(is_causal if is_causal is not None else getattr(module, "is_causal", False))
    cu, width = kwargs["cu_seq_lens_q"], int(kwargs["max_length_q"])
    q, k, v = (t[0].transpose(0, 1).contiguous() for t in (query, key, value))  # (tokens, heads, dim); no copy for BERT
    # on a GPU the flash kernel (the loader checked it can run: why_not_flash); elsewhere its reference
    out = _flash(q, k, v, cu, width, causal, scaling) if q.is_cuda else reference_attention(q, k, v, cu, causal, scaling)
    return out.unsqueeze(0), None


def row_marker(device: torch.device | str) -> torch.Tensor:
    """The 4-D mask a packed row is given: transformers' mask builders return a 4-D mask as it is, and
    :func:`varlen_attention_forward` ignores it."""
    return torch.ones(1, 1, 1, 1, dtype=torch.bool, device=device)


@functools.cache
def registered() -> str:
    """Register :data:`NAME` with transformers once (attention: :func:`varlen_attention_forward`; masks: SDPA's own);
    its name."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(NAME, varlen_attention_forward)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    return NAME


def use_varlen(model: torch.nn.Module) -> None:
    """``model`` (an SDPA model) attends through :data:`NAME` from now on: packed rows variable-length, padded
    batches as before."""
    model.config._attn_implementation = registered()
