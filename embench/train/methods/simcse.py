"""SimCSE (Gao, Yao & Chen, 2021): unsupervised (dropout positives) and supervised (NLI triplets).

* ``unsup-simcse`` (§3): the same sentence twice through the encoder; the two dropout masks make
  the positive pair. [CLS] with an MLP in training only (``mlp: train``, "[CLS] w/ MLP (train)").
* ``sup-simcse`` (§4, Eq. 5/8): entailment hypotheses are positives, contradiction hypotheses hard
  negatives, the anchor's own hard negative weighted by alpha. [CLS] with the MLP kept at test
  (``mlp: keep``: the model's own pooler head, re-initialised, so the saved checkpoint applies it
  under embench's ``cls`` pooling). With ``false_negative_filter`` (an encoder) it is MultiCSR's stage 3
  (Eq. 6-7): in-batch negatives the frozen encoder rates >= ``sigma`` leave the denominator
  (:mod:`embench.train.false_negatives`; the authors' code variants are the ``fn_*`` options).

Defaults are Table A.1 (BERT-base) and the official scripts: max length 32, no warm-up, linear
decay, STS-B dev every 250 steps (the paper's number; the scripts say 125).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ...core.errors import EmbenchError
from .. import distributed, losses
from .. import false_negatives as fn
from ..distributed import DistInfo
from ..module import unwrap
from .base import Batch, Logs, Outputs
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
        std = float(getattr(model.encoder.config, "initializer_range", 0.02))
        if self.options.mlp == "train":  # footnote 9: Linear(h, h) + tanh, newly initialised
            model.head = nn.Sequential(_bert_init(nn.Linear(hidden, hidden), std), nn.Tanh()).to(device)
        elif self.options.mlp == "keep":
            if model.pooling != "cls" or pooler is None or not isinstance(getattr(pooler, "dense", None), nn.Linear):
                raise EmbenchError(
                    "--mlp keep trains the model's own pooler head (BERT/RoBERTa) with --pooling cls; "
                    f"this model ({type(model.encoder).__name__}) with pooling {model.pooling!r} cannot"
                )
            _bert_init(pooler.dense, std)  # footnote 9: the MLP starts from random initialisation
        return model


def _bert_init(linear: nn.Linear, std: float) -> nn.Linear:
    """The MLP's random start as the authors' code draws it: SimCSE's ``cl_init`` (simcse/models.py) builds its
    MLPLayer and calls ``init_weights()``, i.e. BERT's ``_init_weights``: weights from N(0, initializer_range =
    0.02), biases zero (MultiCSR's models.py the same); torch's default Linear init draws both uniformly (weights
    with std 1/sqrt(3 h): 0.021 at h = 768, 0.029 at 384; biases up to 1/sqrt(h))."""
    with torch.no_grad():
        linear.weight.normal_(0.0, std)
        linear.bias.zero_()
    return linear


class UnsupSimCSE(_SimCSE):
    description = "unsupervised SimCSE: dropout positives, MLP head in training only"
    data_kind = "sentences"
    defaults = {"pooling": "cls_before_pooler", "lr": 3e-5, "batch_size": 64, "max_length": 32, "epochs": 1,
                "warmup_ratio": 0.0, "eval_steps": 250}

    def batch(self, examples: Sequence[Any], indices: list[int], rng: random.Random) -> Batch:
        texts = [examples[i] for i in indices]
        return Batch({"anchor": texts, "positive": list(texts)})


@dataclass
class SupSimCSEOptions(SimCSEOptions):
    # MultiCSR stage 3 (§3.3): a frozen encoder's in-batch false negatives leave the denominator
    false_negative_filter: str | None = None  # the frozen encoder P_eta (any model embench loads); None = off
    sigma: float = 0.9  # Eq. 6 threshold (App. E, Figure 7)
    fn_mask_variant: str = "paper"  # paper: removed (-inf), >= sigma | code: logit x 0 (e^0 stays), > sigma
    fn_loss: str = "infonce"  # infonce (Eq. 7) | bce (the authors' code: BCE on the softmax probabilities)
    fn_protect_hard: bool = True  # Eq. 6 keeps the own hard negative; the authors' code does not
    fn_max_length: int | None = None  # the frozen encoder's maximum length (default: its own)
    fn_guide_pooling: str | None = None  # the frozen encoder's pooling (default: its own; the code: cls_before_pooler)

    def __post_init__(self) -> None:
        super().__post_init__()
        fn.check_sigma(self.sigma)
        if self.fn_mask_variant not in fn.MASK_VARIANTS:
            raise EmbenchError(f"--fn-mask-variant must be one of {', '.join(fn.MASK_VARIANTS)}, got {self.fn_mask_variant!r}")
        if self.fn_loss not in fn.FN_LOSSES:
            raise EmbenchError(f"--fn-loss must be one of {', '.join(fn.FN_LOSSES)}, got {self.fn_loss!r}")


class SupSimCSE(_SimCSE):
    description = "supervised SimCSE: NLI entailment positives, contradiction hard negatives"
    data_kind = "triplets"
    Options = SupSimCSEOptions
    defaults = {**UnsupSimCSE.defaults, "pooling": "cls", "lr": 5e-5, "batch_size": 512, "epochs": 3,
                "method_options": {"mlp": "keep"}}
    guide: fn.Guide | None = None  # held here, never by the trained module: not saved, not optimised
    _masked_total = 0.0  # masked pairs and in-batch negatives over every step of this process's run, so that a
    _pairs_total = 0.0  # logging window (--log-steps) loses no step's share

    def build(self, device: str) -> nn.Module:
        model = super().build(device)
        o = self.options
        if o.false_negative_filter:
            self.guide = fn.Guide(o.false_negative_filter, device, o.fn_max_length, o.fn_guide_pooling)
        return model

    def batch(self, examples: Sequence[Any], indices: list[int], rng: random.Random) -> Batch:
        rows = [examples[i] for i in indices]
        return Batch({"anchor": [r[0] for r in rows], "positive": [r[1] for r in rows], "hard": [r[2] for r in rows]})

    def objective(self, outputs: Outputs, batch: Batch, dist: DistInfo) -> tuple[torch.Tensor, Logs]:
        o = self.options
        if self.guide is None:
            if o.fn_loss != "infonce":
                raise EmbenchError("--fn-loss bce is the MultiCSR code's loss with the false-negative filter: "
                                   "give --false-negative-filter ENCODER too")
            return super().objective(outputs, batch, dist)
        reps = outputs.reps
        n = reps["anchor"].shape[0]
        offset = dist.rank * n
        mask = self.false_negatives(batch, offset)
        positives = distributed.gather_with_grad(reps["positive"])
        hard = distributed.gather_with_grad(reps["hard"])
        code = o.fn_mask_variant == "code"
        loss = losses.info_nce(reps["anchor"], positives, o.temperature, hard, self.hard_negative_weight, offset=offset,
                               exclude=mask.to(reps["anchor"].device), masked_as="zero" if code else "remove",
                               objective=o.fn_loss)
        # the same cells for the count, the step's share and the run's: other examples' negatives (masked_pairs);
        # tensors on the device, read with the step's loss (methods/base.py, Logs)
        pairs, n_negatives = fn.masked_pairs(mask, offset)  # of 2N(N-1) for this process's anchors (N >= 2)
        share = pairs / n_negatives
        self._masked_total = pairs + self._masked_total
        self._pairs_total += n_negatives
        return loss, {"fn_masked_share": share, "fn_masked_pairs": pairs,
                      "fn_masked_share_so_far": self._masked_total / self._pairs_total}

    def false_negatives(self, batch: Batch, offset: int) -> torch.Tensor:
        """Eq. 6 over the global batch: the frozen encoder scores this process's anchors against every
        positive and hard negative (vectors gathered over processes), once per step."""
        o, guide = self.options, self.guide
        anchors = guide.vectors(batch.texts["anchor"])
        pos = distributed.gather_with_grad(guide.vectors(batch.texts["positive"]))  # all on the guide's device
        hard = distributed.gather_with_grad(guide.vectors(batch.texts["hard"]))
        return fn.false_negative_mask(fn.guide_cosines(anchors, pos), fn.guide_cosines(anchors, hard), o.sigma,
                                      offset, protect_hard=o.fn_protect_hard, strict=o.fn_mask_variant == "code")
