"""SimCSE (Gao, Yao & Chen, 2021): unsupervised (dropout positives) and supervised (NLI triplets).

* ``unsup-simcse`` (§3): the same sentence twice through the encoder; the two dropout masks make
  the positive pair. [CLS] with an MLP in training only (``mlp: train``, "[CLS] w/ MLP (train)").
* ``sup-simcse`` (§4, Eq. 5/8): entailment hypotheses are positives, contradiction hypotheses hard
  negatives, the anchor's own hard negative weighted by alpha. [CLS] with the MLP kept at test
  (``mlp: keep``: the model's own pooler head, re-initialised, so the saved checkpoint applies it
  under embench's ``cls`` pooling).

Defaults are Table A.1 (BERT-base) and the official scripts: max length 32, no warm-up, linear
decay, STS-B dev every 250 steps (the paper's number; the scripts say 125).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from torch import nn

from ...core.errors import EmbenchError
from ..module import unwrap
from .base import Batch
from .contrastive import ContrastiveMethod, ContrastiveOptions


@dataclass
class SimCSEOptions(ContrastiveOptions):
    mlp: str = "train"  # none | train (MLP in training only) | keep (the pooler head, kept at test)
    hard_negative_weight: float = 1.0  # alpha of Eq. 8 (the code's hard_negative_weight w: alpha = e^w)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.mlp not in ("none", "train", "keep"):
            raise EmbenchError(f"--mlp must be none, train or keep, got {self.mlp!r}")
        if self.hard_negative_weight <= 0:
            raise EmbenchError(f"--hard-negative-weight must be positive, got {self.hard_negative_weight}")


class _SimCSE(ContrastiveMethod):
    Options = SimCSEOptions

    @property
    def hard_negative_weight(self) -> float:  # type: ignore[override]
        return self.options.hard_negative_weight

    def build(self, device: str) -> nn.Module:
        model = super().build(device)
        hidden = model.encoder.config.hidden_size
        pooler = getattr(unwrap(model.encoder), "pooler", None) or getattr(model.encoder, "pooler", None)
        if self.options.mlp == "train":  # footnote 9: Linear(h, h) + tanh, newly initialised
            model.head = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh()).to(device)
        elif self.options.mlp == "keep":
            if model.pooling != "cls" or pooler is None or not isinstance(getattr(pooler, "dense", None), nn.Linear):
                raise EmbenchError(
                    "--mlp keep trains the model's own pooler head (BERT/RoBERTa) with --pooling cls; "
                    f"this model ({type(model.encoder).__name__}) with pooling {model.pooling!r} cannot"
                )
            pooler.dense.reset_parameters()  # footnote 9: the MLP starts from random initialisation
        return model


class UnsupSimCSE(_SimCSE):
    description = "unsupervised SimCSE: dropout positives, MLP head in training only"
    data_kind = "sentences"
    defaults = {"pooling": "cls_before_pooler", "lr": 3e-5, "batch_size": 64, "max_length": 32, "epochs": 1,
                "warmup_ratio": 0.0, "eval_steps": 250}

    def batch(self, examples: Sequence[Any], indices: list[int], rng: random.Random) -> Batch:
        texts = [examples[i] for i in indices]
        return Batch({"anchor": texts, "positive": list(texts)})


class SupSimCSE(_SimCSE):
    description = "supervised SimCSE: NLI entailment positives, contradiction hard negatives"
    data_kind = "triplets"
    defaults = {**UnsupSimCSE.defaults, "pooling": "cls", "lr": 5e-5, "batch_size": 512, "epochs": 3,
                "method_options": {"mlp": "keep"}}

    def batch(self, examples: Sequence[Any], indices: list[int], rng: random.Random) -> Batch:
        rows = [examples[i] for i in indices]
        return Batch({"anchor": [r[0] for r in rows], "positive": [r[1] for r in rows], "hard": [r[2] for r in rows]})
