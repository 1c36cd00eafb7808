"""The interface every training method implements, and the defaults most of them keep.

A method is one class, registered by name in ``METHODS`` (``methods/__init__.py``):

- ``Options``: a dataclass of its own options, nested in the training config (``method_options``);
- ``defaults``: general options it sets (pooling, lr, batch size, ...), from its paper;
- ``examples(root)``: the training examples (default: ``training_sets.load(data_kind, ...)``);
- ``build(device)``: the ``nn.Module`` to train (default: a :class:`SentenceModel` on the backbone);
- ``batch(examples, indices, rng)``: one (micro-)batch: named views of texts, tensors, extras;
- ``forward(module, batch)``: vectors per view (+ an additive auxiliary loss term);
- ``objective(outputs, batch, dist)``: the loss over the vectors of the WHOLE batch, and logs;
- ``loss(module, batch, dist)``: ``objective(forward(...))`` plus the auxiliary term;
- ``export(module, folder, meta)``: a checkpoint every embench command loads.

The trainer tells a method where the run is: ``step`` (the 0-based optimiser step being computed, set
before that step's ``batch``, ``forward`` and ``objective``) and ``total_steps`` (the run's resolved
number of steps, set before any batch), so a schedule inside a method (an annealed temperature, a
loss weight that warms up) needs no trainer edit: ``progress`` is ``step / total_steps``.

Splitting ``forward`` from ``objective`` lets the trainer accumulate gradients over micro-batches
without changing a contrastive loss: vectors of every micro-batch are computed first, the
objective sees all of them, then each micro-batch is re-run with its gradient (GradCache, Gao et
al. 2021; sentence-transformers' ``CachedMultipleNegativesRankingLoss``).
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from ...data import training_sets
from ...data.root import DataRoot
from .. import checkpoints
from ..adapters import exportable
from ..backbone import load_backbone
from ..config import TrainConfig
from ..distributed import DistInfo
from ..module import SentenceModel, unwrap


@dataclass
class NoOptions:
    """A method without options of its own."""


@dataclass
class Batch:
    """One (micro-)batch: named views of texts (each one text per example), tensors and extras."""

    texts: dict[str, list[str]]
    tensors: dict[str, torch.Tensor] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(next(iter(self.texts.values()))) if self.texts else 0


# Scalars a method logs: floats, or 0-d tensors left on the device. The trainer reads the tensors with the step's loss
# and gradient norm, in one wait for the device once the backward is queued (``step.py``): a ``float()`` of a loss term
# inside ``objective`` would make the host wait for the forward before it could queue the backward.
Logs = dict[str, float | torch.Tensor]


@dataclass
class Outputs:
    """What ``forward`` gives: vectors per view (one row per example) and an additive loss term."""

    reps: dict[str, torch.Tensor]
    aux: torch.Tensor | None = None  # already weighted; added to the objective (e.g. lambda * MLM)
    logs: Logs = field(default_factory=dict)


class Method(ABC):
    """Base class of training methods; see the module docstring for the interface."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    data_kind: ClassVar[str] = "sentences"  # sentences | triplets | documents (data/training_sets.py)
    Options: ClassVar[type] = NoOptions
    defaults: ClassVar[dict[str, Any]] = {}
    # True where a LoRA run's checkpoint is the adapter alone (never merged into the base): its frozen base
    # weights may then be held in the autocast dtype (train/frozen_weights.py)
    exports_adapter_alone: ClassVar[bool] = False
    trains_decoders: ClassVar[bool] = False  # its --model must be a decoder LLM (a load error's hint says so)

    def __init__(self, config: TrainConfig):
        self.config = config
        self.options = config.method_options
        self.step = 0  # the optimiser step being computed (0-based); the trainer sets it before each step
        self.total_steps = 0  # the run's number of steps; the trainer sets it once the data are read

    @property
    def progress(self) -> float:
        """The share of training done before this step: 0 at the first step, (T-1)/T at the last."""
        return self.step / self.total_steps if self.total_steps else 0.0

    # -- data ------------------------------------------------------------------------------------
    def examples(self, root: DataRoot) -> Sequence[Any]:
        found = training_sets.load(self.data_kind, self.config.data, root)
        return found[: self.config.max_examples] if self.config.max_examples else found

    @abstractmethod
    def batch(self, examples: Sequence[Any], indices: list[int], rng: random.Random) -> Batch:
        """The (micro-)batch of ``examples[indices]``; ``rng`` is seeded per step and process."""

    def example_lengths(self, examples: Sequence[Any], indices: list[int]) -> list[int] | None:
        """Characters of each example's longest text, by which a step split into micro-batches groups its
        examples (``step.py``); None where the texts are made in ``batch`` (crops drawn there)."""
        lengths = []
        for i in indices:
            ex = examples[i]
            texts = [ex] if isinstance(ex, str) else ex if isinstance(ex, (tuple, list)) else None
            if not texts or not all(isinstance(t, str) for t in texts):
                return None
            lengths.append(max(len(t) for t in texts))
        return lengths

    # -- model -----------------------------------------------------------------------------------
    def build(self, device: str) -> nn.Module:
        return self.sentence_model(device)

    def sentence_model(self, device: str, mlm: bool = False) -> SentenceModel:
        """The backbone with the run's pooler, maximum length and prompt (and its MLM head when ``mlm``)."""
        cfg = self.config
        bb = load_backbone(cfg, device, mlm=mlm)
        return SentenceModel(bb.encoder, bb.tokenizer, pooling=bb.family.training_pooling(cfg.pooling),
                             max_length=cfg.max_length, prompt=cfg.prompt or bb.family.prompt,
                             mlm_head=bb.mlm_head, bucket_tokens=cfg.bucket_tokens if cfg.group_by_length else 0,
                             bucket_min_tokens=cfg.bucket_min_tokens).to(device)

    def pass_texts(self, batch: Batch) -> list[str]:
        """The texts ``forward`` gives the module in its one call: every view's, view after view. The trainer
        tokenizes them ahead (``step.py``); a method whose ``forward`` passes other texts overrides this."""
        return [t for name in batch.texts for t in batch.texts[name]]

    def splits_by_text(self) -> bool:
        """True where ``forward`` is one module call over ``pass_texts`` whose vectors are cut into the views (this
        class's own), with no auxiliary loss: a step split into micro-batches may then cut it by text, not by
        example (``accumulation.py``)."""
        return type(self).forward is Method.forward

    def forward(self, module: nn.Module, batch: Batch) -> Outputs:
        """Every view through ``module`` in ONE call (distinct dropout masks per view, as SimCSE does)."""
        names = list(batch.texts)
        z = module(self.pass_texts(batch))
        return Outputs(dict(zip(names, z.float().chunk(len(names)), strict=True)))

    @abstractmethod
    def objective(self, outputs: Outputs, batch: Batch, dist: DistInfo) -> tuple[torch.Tensor, Logs]:
        """The loss over the vectors of this process's whole batch (gather over processes with
        ``distributed.gather_with_grad``), and scalars to log (:data:`Logs`: detached 0-d tensors are read by the
        trainer after the backward is queued)."""

    def loss(self, module: nn.Module, batch: Batch, dist: DistInfo) -> tuple[torch.Tensor, Logs]:
        out = self.forward(module, batch)
        loss, logs = self.objective(out, batch, dist)
        if out.aux is not None:
            loss = loss + out.aux
        return loss, {**logs, **out.logs}

    # -- evaluation and export -------------------------------------------------------------------
    def encoder_for_eval(self, module: nn.Module) -> SentenceModel:
        """The part of ``module`` that gives test-time vectors (its encoder, tokenizer and pooling)."""
        return unwrap(module)

    def export(self, module: nn.Module, folder: Path, meta: dict[str, Any]) -> Path:
        m = self.encoder_for_eval(module)
        return checkpoints.save_model_folder(exportable(m.encoder), m.tokenizer, folder, pooling=m.pooling,
                                             max_length=self.export_max_length(m.encoder, m.tokenizer),
                                             meta={**meta, "prompt": m.prompt})

    def export_max_length(self, encoder: nn.Module, tokenizer: Any) -> int:
        """The maximum length a checkpoint is saved with: ``export_max_length`` if set, else the backbone's own
        (the training length only shortens training batches; the authors' checkpoints encode untruncated)."""
        from ...models.max_length import model_max_length

        return int(self.config.export_max_length or model_max_length(encoder.config, tokenizer))
