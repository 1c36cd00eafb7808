"""The precision a run trains in: fp32, bf16 or fp16 autocast over fp32 weights, or bf16 weights.

``fp16-mixed`` is what Hugging Face's Trainer runs under ``--fp16`` (SimCSE's and MultiCSR's scripts): fp16
autocast with a dynamic loss scale. fp16 has 5 exponent bits, so gradients under about 6e-8 would flush to zero: the loss
is multiplied by a scale before backward and the gradients divided by it before clipping and the update
(``torch.amp.GradScaler``); a step whose gradients overflowed is skipped and the scale halved, as theirs
was. bf16 has fp32's exponent range and needs none of this; a disabled scaler is a no-op, so every
precision runs through the same step.
"""

from __future__ import annotations

import contextlib

import torch

from ..models.precision import warn_if_emulated

AUTOCAST = {"bf16-mixed": torch.bfloat16, "fp16-mixed": torch.float16}


def resolve_precision(asked: str, device: str) -> str:
    """``auto``: bf16 autocast on a GPU that has bf16, else fp32; bf16 or fp16 on hardware that emulates it is warned
    of (fp16-mixed, the setting of SimCSE's scripts on their GPUs, runs about 5x slower than fp32 on most CPUs)."""
    precision = asked
    if precision == "auto":
        precision = "bf16-mixed" if device.startswith("cuda") and torch.cuda.is_bf16_supported() else "fp32"
    warn_if_emulated(device.split(":")[0], eval_dtype(precision), "--precision", precision)  # fp32: never
    return precision


def _device_type(device: str) -> str:
    return "cuda" if device.startswith("cuda") else "cpu"


def precision_context(precision: str, device: str) -> contextlib.AbstractContextManager:
    """bf16 or fp16 autocast over fp32 weights for ``*-mixed``; nothing for fp32 and bf16 weights."""
    if precision not in AUTOCAST:
        return contextlib.nullcontext()
    return torch.autocast(device_type=_device_type(device), dtype=AUTOCAST[precision])


def grad_scaler(precision: str, device: str) -> torch.amp.GradScaler:
    """The dynamic loss scale of fp16 autocast; a scaler that does nothing for every other precision."""
    return torch.amp.GradScaler(_device_type(device), enabled=precision == "fp16-mixed")


def eval_dtype(precision: str) -> str:
    """The dtype a run's evaluations encode in: its training precision's."""
    return {"fp32": "fp32", "fp16-mixed": "fp16"}.get(precision, "bf16")
