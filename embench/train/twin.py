"""JTCSE's twin towers (Zong et al. §IV): two encoders of one tokenizer, trained together.

:class:`TwinTowers` runs both towers on the same tokenized texts (both dropout views of a batch) and
gives, per tower, the [CLS] of the last hidden state (h^L), the pooler output (h^P, for the modulus
loss) and, with cross-attention, the [CLS] of its cross stream (c^O, Eq. 12). The cross-attention
wiring (:mod:`embench.train.cross_attention`): at each CAEL a tower's attention probabilities (Eq. 8)
weight the other tower's values (Eq. 10), the context tensor goes through the rest of the same layer
(output projection, residual with the tower's own input, LayerNorm, FFN), and the result feeds the
next layer of a separate CROSS stream that starts at the first CAEL and ends at the last layer; the
main streams, which give h^L and h^P and are what inference uses, are never changed by it.

At inference the twin is one model whose vector is [CLS]_I + [CLS]_II (§IV.D, the code's
``evaluation_CKPT.py``): :class:`SummedTowers` gives the SUM of the towers' hidden states, so any
[CLS] pooling of it (``cls_before_pooler``) is that sum; the trainer's evaluation uses it, and the
exported folder is an ensemble of the two towers (:mod:`embench.models.ensemble`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from transformers.modeling_outputs import BaseModelOutput

from ..models.attention_masks import model_inputs
from ..models.layer_stack import transformer_layers
from .cross_attention import cross_streams
from .module import SentenceModel


class SummedTowers(nn.Module):
    """Two encoders as one: hidden states are the towers' sums (so [CLS] pooling gives [CLS]_I + [CLS]_II)."""

    def __init__(self, encoder_1: nn.Module, encoder_2: nn.Module):
        super().__init__()
        self.encoder_1, self.encoder_2 = encoder_1, encoder_2
        self.config = encoder_1.config

    def forward(self, output_hidden_states: bool = False, return_dict: bool = True, **enc: Any) -> BaseModelOutput:
        o1 = self.encoder_1(**enc, output_hidden_states=output_hidden_states, return_dict=True)
        o2 = self.encoder_2(**enc, output_hidden_states=output_hidden_states, return_dict=True)
        states = (tuple(a + b for a, b in zip(o1.hidden_states, o2.hidden_states, strict=True))
                  if output_hidden_states else None)
        return BaseModelOutput(last_hidden_state=o1.last_hidden_state + o2.last_hidden_state, hidden_states=states)


class TwinTowers(nn.Module):
    """Both towers, their tokenizer, and the cross-attention layers used in training.

    ``view`` is the twin as one sentence model ([CLS]_I + [CLS]_II), used for evaluation and token
    counting; ``forward(texts)`` gives the training tensors (see the module docstring).
    """

    def __init__(self, encoder_1: nn.Module, encoder_2: nn.Module, tokenizer: Any, *, max_length: int,
                 prompt: str = "", cross_at: list[int] | None = None, pooler: bool = True):
        super().__init__()
        self.view = SentenceModel(SummedTowers(encoder_1, encoder_2), tokenizer, pooling="cls_before_pooler",
                                  max_length=max_length, prompt=prompt)
        self.cross_at = list(cross_at or [])
        self.pooler = pooler
        if not pooler:  # unused: out of the optimiser (and of DDP's unused-parameter check)
            for enc in (encoder_1, encoder_2):
                for p in (getattr(enc, "pooler", None) or nn.Module()).parameters():
                    p.requires_grad_(False)

    @property
    def towers(self) -> tuple[nn.Module, nn.Module]:
        return self.view.encoder.encoder_1, self.view.encoder.encoder_2

    @property
    def encoder(self) -> nn.Module:  # what the trainer compiles and counts
        return self.view.encoder

    @property
    def tokenizer(self) -> Any:
        return self.view.tokenizer

    def forward(self, texts: list[str]) -> dict[str, torch.Tensor]:
        """Per tower ``n`` in (1, 2): ``cls_n`` (h^L), ``pool_n`` (h^P, when ``pooler``), ``cross_n`` (c^O, with CAELs).

        Tower I runs before tower II, each in one call on all ``texts`` (fixed dropout order)."""
        enc = self.view.tokenize(texts)
        states = bool(self.cross_at)
        device = enc["input_ids"].device  # on a GPU each tower gets its attention mask ready-made (no wait for the device)
        outs = [t(**model_inputs(t, enc, str(device)), output_hidden_states=states, return_dict=True) for t in self.towers]
        got: dict[str, torch.Tensor] = {}
        for n, o in enumerate(outs, 1):
            got[f"cls_{n}"] = o.last_hidden_state[:, 0]
            if self.pooler:
                got[f"pool_{n}"] = o.pooler_output
        if self.cross_at:
            layers = [transformer_layers(t) for t in self.towers]
            c1, c2 = cross_streams(layers[0], layers[1], outs[0].hidden_states, outs[1].hidden_states,
                                   enc["attention_mask"], self.cross_at)
            got["cross_1"], got["cross_2"] = c1[:, 0], c2[:, 0]
        return got
