"""Where a transformer keeps its layers and its final norm: one finder for encoders (BERT, DistilBERT),
decoders (Llama, GPT-2, ...), their ``*ForCausalLM``/``*ForMaskedLM`` wrappers and peft models.

Every place that needs the layers (freezing the first ones, removing LayerNorms, bidirectional
attention, the final norm of a layer view, JTCSE's cross-layer streams) asks here, so a model family
that keeps them under a new name is taught once.
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.errors import EmbenchError

# encoders first (BERT's ``encoder.layer``, DistilBERT's ``transformer.layer``), then decoders
LAYER_PATHS = ("encoder.layer", "transformer.layer", "layers", "h", "blocks", "decoder.layers")
# the modules a wrapper keeps its base model under (``*ForCausalLM.model``, GPT-2's ``transformer``, peft's ``base_model``)
_WRAPPED = ("model", "transformer", "base_model", "language_model", "decoder")
_NORM_NAMES = ("norm", "ln_f", "final_layernorm", "final_layer_norm")


def _get(module: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        module = getattr(module, part, None)
        if module is None:
            return None
    return module


def layer_stack(model: torch.nn.Module) -> tuple[torch.nn.Module, torch.nn.ModuleList]:
    """(the module that runs the layers, its non-empty ``ModuleList`` of layers), searched breadth-first
    through the wrappers' base models."""
    seen: list[Any] = [model]
    while seen:
        m = seen.pop(0)
        for path in LAYER_PATHS:
            layers = _get(m, path)
            if isinstance(layers, torch.nn.ModuleList) and len(layers) > 0:
                return (_get(m, path.rsplit(".", 1)[0]) if "." in path else m), layers
        for child in _WRAPPED:
            c = getattr(m, child, None)
            if isinstance(c, torch.nn.Module) and c is not m:
                seen.append(c)
    raise EmbenchError(f"cannot find the transformer layers of a {type(model).__name__} (looked for {', '.join(LAYER_PATHS)})")


def transformer_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The ``ModuleList`` of the model's transformer layers (see :func:`layer_stack`)."""
    return layer_stack(model)[1]


def final_norm(model: torch.nn.Module) -> torch.nn.Module | None:
    """The norm a decoder applies after its last layer (``norm``, ``ln_f``, ...), or None if it has none
    (encoders such as BERT normalise inside each layer)."""
    try:
        base, _ = layer_stack(model)
    except EmbenchError:
        return None
    for name in _NORM_NAMES:
        norm = getattr(base, name, None)
        if isinstance(norm, torch.nn.Module):
            return norm
    return None
