"""Removing the LayerNorms of a BERT-style encoder's last layers: JTCSE's Fig. 8 study (§VI.A).

The paper removes the LayerNorms of the last one to six encoder layers to let hidden-state moduli
grow, and finds STS performance falls. Training applies it to both towers; a model exported from
such a run records it (``remove_layernorm`` of an ensemble member), and loading applies it again,
because a saved checkpoint cannot say that a LayerNorm is gone.
"""

from __future__ import annotations

from torch import nn

from ..core.errors import EmbenchError


def remove_layernorms(layers: nn.ModuleList, last: int) -> None:
    """Replace both LayerNorms (after attention, after the FFN) of each of the ``last`` layers by the identity."""
    if last < 0 or last > len(layers):
        raise EmbenchError(f"--remove-layernorm {last}: the model has {len(layers)} layers")
    for layer in list(layers)[len(layers) - last:]:
        for block in (getattr(getattr(layer, "attention", None), "output", None), getattr(layer, "output", None)):
            if block is None or not isinstance(getattr(block, "LayerNorm", None), nn.LayerNorm | nn.Identity):
                raise EmbenchError(f"--remove-layernorm: {type(layer).__name__} has no BERT-style LayerNorm to remove")
            block.LayerNorm = nn.Identity()
