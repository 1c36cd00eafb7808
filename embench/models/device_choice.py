"""Which device a model runs on: the one asked for (checked against this machine), else CUDA when present."""

from __future__ import annotations

import torch

from ..core.errors import EmbenchError


def pick_device(device: str | None = None, option: str = "--device") -> str:
    """``device`` if given (checked: a device torch knows and this machine has), else CUDA when present, else CPU.
    ``option`` is the option the errors name (``--devices`` for a device of ``embench grid --devices``)."""
    if not device:
        return "cuda" if torch.cuda.is_available() else "cpu"
    if "," in device or device.strip().lower() == "all":
        raise EmbenchError(f"{option} {device!r}: several devices (one process each) split the encoding passes of "
                           "`embench run`, `compare`, `mteb`, `analyze` and `audit`; load_model() and the steps that "
                           "train or generate take one device, e.g. --device cuda:0")
    try:
        kind = torch.device(device)
    except (RuntimeError, ValueError):
        raise EmbenchError(f"{option} {device!r} is not a device; use cpu, cuda, cuda:N or mps") from None
    if kind.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0 or (kind.index or 0) >= count:
            raise EmbenchError(f"{option} {device!r}: this machine has {count} CUDA device(s)")
    elif kind.type == "mps":
        if not torch.backends.mps.is_available():
            raise EmbenchError(f"{option} {device!r}: MPS is not available on this machine")
    elif kind.type != "cpu":
        raise EmbenchError(f"{option} {device!r}: embench runs on cpu, cuda, cuda:N or mps")
    return device
