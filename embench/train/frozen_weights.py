"""Frozen base weights of a LoRA run held in the autocast dtype (bf16 or fp16), not in fp32.

Under ``--precision bf16-mixed`` or ``fp16-mixed`` every matmul casts its fp32 weight to the autocast
dtype, in each forward; autocast caches the casts of trained weights only, so a frozen base is cast again
at every use, and the cast copy is what backward keeps. For LLaMA-2-7B under LoRA that is 27 GB of fp32
weights plus 13.5 GB of casts held for backward, where the authors' 4-bit QLoRA or a plain bf16 loop
hold 3.5 or 13.5 GB. A frozen weight is never updated, so its fp32 copy serves nothing: held in the
autocast dtype, each matmul gets the very numbers the cast gave (round to nearest, once), and the cast
is a no-op. Only the weights of ``nn.Linear`` layers (what autocast casts) change; embeddings, norms
and biases keep fp32, as autocast computes with them in fp32. It applies where the run's checkpoint is
the adapter alone (BeLLM's export), so no exported weight is ever rounded; a merged export (an encoder's
LoRA) keeps fp32 bases.
"""

from __future__ import annotations

import torch
from torch import nn

from .mixed_precision import AUTOCAST


def hold_frozen_weights(model: nn.Module, precision: str) -> int:
    """Cast the frozen ``nn.Linear`` weights of ``model`` to ``precision``'s autocast dtype; returns the bytes freed
    (0 where the precision has no autocast). Quantised layers (bitsandbytes) are left as they are."""
    dtype = AUTOCAST.get(precision)
    if dtype is None:
        return 0
    freed = 0
    for module in model.modules():
        w = getattr(module, "weight", None)
        if (isinstance(module, nn.Linear) and isinstance(w, nn.Parameter) and not w.requires_grad
                and w.dtype == torch.float32 and type(w) is nn.Parameter):  # a bitsandbytes Params4bit is not
            freed += w.numel() * (w.element_size() - torch.finfo(dtype).bits // 8)
            module.weight = nn.Parameter(w.detach().to(dtype), requires_grad=False)
    return freed
