"""Where a decoder keeps its layers and its final norm, for a bare model, a ``*ForCausalLM`` wrapper or a peft model."""

from __future__ import annotations

from typing import Any

import torch

from ..core.errors import EmbenchError

_LAYER_PATHS = ("layers", "h", "blocks", "decoder.layers")
_NORM_NAMES = ("norm", "ln_f", "final_layernorm", "final_layer_norm")


def _get(module: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        module = getattr(module, part, None)
        if module is None:
            return None
    return module


def decoder_stack(model: torch.nn.Module) -> tuple[torch.nn.Module, torch.nn.ModuleList]:
    """(the module that runs the decoder layers, its ``ModuleList`` of layers), for a bare model, a
    ``*ForCausalLM`` wrapper or a peft model."""
    seen: list[Any] = [model]
    while seen:
        m = seen.pop(0)
        for path in _LAYER_PATHS:
            layers = _get(m, path)
            if isinstance(layers, torch.nn.ModuleList) and len(layers) > 0:
                return (_get(m, path.rsplit(".", 1)[0]) if "." in path else m), layers
        for child in ("model", "transformer", "base_model", "language_model", "decoder"):
            c = getattr(m, child, None)
            if isinstance(c, torch.nn.Module) and c is not m:
                seen.append(c)
    raise EmbenchError(f"cannot find the decoder layers of a {type(model).__name__} (looked for {', '.join(_LAYER_PATHS)})")


def final_norm(model: torch.nn.Module) -> torch.nn.Module | None:
    """The norm a decoder applies after its last layer (``norm``, ``ln_f``, ...), or None if it has none
    (encoders such as BERT normalise inside each layer)."""
    try:
        base, _ = decoder_stack(model)
    except EmbenchError:
        return None
    for name in _NORM_NAMES:
        norm = getattr(base, name, None)
        if isinstance(norm, torch.nn.Module):
            return norm
    return None
