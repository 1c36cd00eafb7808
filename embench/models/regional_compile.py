"""``--compile`` for encoding: ``torch.compile`` of each transformer layer, not of the whole model.

A model's layers are one class run N times, and with ``torch.compile``'s default of treating a module's parameters
as inputs, the graph compiled for the first layer serves the others: a model compiles once, whatever its depth.
Compiling the whole forward instead traces and lowers every layer, unrolled: on this project's CPU a 28-layer
Qwen2-shaped model (hidden 256) took 105.6 s before its first vectors against 7.0 s layer by layer, and on an H200
the whole Qwen2-1.5B did not finish compiling within a 4-minute limit (``reports/benchmarks/encode_gpu.md``, run A).
What fusion gains sits inside the layers (norms, RoPE, activations and residual adds around the matrix
multiplies); the embeddings, the final norm and the pooler run eagerly. This is PyTorch's "regional compilation"
recipe. Shapes are dynamic, so the engine's batches (every width and row count) share the one compile.
"""

from __future__ import annotations

import torch

from ..core.errors import EmbenchError
from .layer_stack import transformer_layers


def compile_layers(model: torch.nn.Module) -> None:
    """Compile ``model``'s transformer layers in place (dynamic shapes), or its whole forward where no layer stack
    is found."""
    try:
        layers = transformer_layers(model)
    except EmbenchError:
        model.compile(dynamic=True)
        return
    for layer in layers:
        layer.compile(dynamic=True)
