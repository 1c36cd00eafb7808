"""JTCSE's cross-attention encoder layers (CAEL, Zong et al. §IV.C, Eqs. 7-10).

At a CAEL ``j`` each tower computes its own attention probabilities from its own input and its own
Q/K weights (Eq. 8, per head, scaled by ``1/sqrt(d_head)`` as BERT's multi-head attention does), and
weights the OTHER tower's values with them (Eq. 10):

    SA_I^j   = softmax(Q_I^j(HD_I^{j-1}) K_I^j(HD_I^{j-1})^T / sqrt(d_head) + mask)      (8)
    CT_I^j   = SA_I^j V_I^j(HD_I^{j-1})                                                 (9)
    CACT_I^j = SA_I^j V_II^j(HD_II^{j-1})                                               (10)

and symmetrically for tower II. No parameter is added: every projection is the layer's own.

The paper leaves the wiring after the context tensor open. embench's choice (documented in
:class:`~embench.train.twin.TwinTowers` too): the context tensor goes through the rest of the SAME
layer (output projection, dropout, residual with the tower's own input, LayerNorm, feed-forward),
as CT would. The cross stream is a separate stream per tower: it starts from the towers' own hidden
states at the input of the first CAEL, runs every later layer (a CAEL as Eq. 10, any other layer
as ordinary self-attention, Eq. 9) and ends at the last layer, which is always a CAEL (Eq. 7 with
k dividing the number of layers); its [CLS] is c^O of Eq. 12. The main streams are untouched
("without disrupting the original attention distribution", §IV.C), so what is trained is what is
used at inference (cross-attention is training only).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..core.errors import EmbenchError


def cross_layer_indices(num_layers: int, count: int) -> list[int]:
    """0-based indices of ``count`` CAELs: Eq. 7, L = {i | 1 <= i <= N, i mod k = 0}, k = N / count."""
    if count == 0:
        return []
    if count < 0 or num_layers % count:
        ok = [d for d in range(1, num_layers + 1) if num_layers % d == 0]
        raise EmbenchError(f"--cross-layers {count}: the number of cross-attention layers must divide the model's "
                           f"{num_layers} layers (Eq. 7); choose 0 (off) or one of {ok}")
    k = num_layers // count
    return [i - 1 for i in range(1, num_layers + 1) if i % k == 0]


def attention_bias(attention_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(B, 1, 1, T) additive mask: 0 on real tokens, the dtype's minimum on padding."""
    return (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def _heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    b, t, d = x.shape
    return x.view(b, t, heads, d // heads).transpose(1, 2)


def _self_attention(layer: nn.Module) -> nn.Module:
    sa = getattr(getattr(layer, "attention", None), "self", None)
    if sa is None or not all(isinstance(getattr(sa, n, None), nn.Linear) for n in ("query", "key", "value")):
        raise EmbenchError(f"cross-attention needs BERT-style layers (attention.self.query/key/value); "
                           f"{type(layer).__name__} has none: use --cross-layers 0")
    return sa


def attention_probs(layer: nn.Module, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Eq. 8: the layer's attention probabilities (B, H, T, T), with its attention dropout in training."""
    sa = _self_attention(layer)
    h = sa.num_attention_heads
    q, k = _heads(sa.query(x), h), _heads(sa.key(x), h)
    scores = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5 + bias
    return F.dropout(scores.softmax(dim=-1), sa.dropout.p, training=layer.training)


def values(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The layer's value vectors of ``x``, per head (B, H, T, d_head)."""
    sa = _self_attention(layer)
    return _heads(sa.value(x), sa.num_attention_heads)


def layer_tail(layer: nn.Module, context: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The rest of a BERT layer after the context tensor: output projection + residual + LayerNorm, FFN."""
    b, h, t, dh = context.shape
    merged = context.transpose(1, 2).reshape(b, t, h * dh)
    attended = layer.attention.output(merged, x)
    return layer.output(layer.intermediate(attended), attended)


def cael(layer_1: nn.Module, layer_2: nn.Module, x_1: torch.Tensor, x_2: torch.Tensor, bias: torch.Tensor,
         cross: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """One layer of both towers' cross streams: Eq. 10 when ``cross``, else each tower's own self-attention (Eq. 9)."""
    sa_1, sa_2 = attention_probs(layer_1, x_1, bias), attention_probs(layer_2, x_2, bias)
    v_1, v_2 = values(layer_1, x_1), values(layer_2, x_2)
    ct_1, ct_2 = (sa_1 @ v_2, sa_2 @ v_1) if cross else (sa_1 @ v_1, sa_2 @ v_2)
    return layer_tail(layer_1, ct_1, x_1), layer_tail(layer_2, ct_2, x_2)


def cross_streams(layers_1: nn.ModuleList, layers_2: nn.ModuleList, states_1: tuple[torch.Tensor, ...],
                  states_2: tuple[torch.Tensor, ...], attention_mask: torch.Tensor,
                  cross_at: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """The two cross streams' last hidden states. ``states_*`` are the towers' hidden states
    (``hidden_states[j]`` is the input of layer ``j``); the streams start at the first CAEL."""
    start, at = min(cross_at), set(cross_at)
    x_1, x_2 = states_1[start], states_2[start]
    bias = attention_bias(attention_mask, x_1.dtype)
    for j in range(start, len(layers_1)):
        x_1, x_2 = cael(layers_1[j], layers_2[j], x_1, x_2, bias, cross=j in at)
    return x_1, x_2
