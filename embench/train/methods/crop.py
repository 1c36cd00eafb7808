"""Crop augmentation and its dropout baseline (González-Márquez, Berens & Kobak, "Cropping
outperforms dropout", §3.1 and A.1).

* ``crop``: two distinct chunks of ``t`` consecutive sentences of one document are a positive pair.
* ``dropout``: one chunk twice, two dropout masks (the paper's SimCSE-style baseline).

Defaults follow the paper and its code: Adam, lr 2e-5, batch 64, linear warm-up over the first
10% of ONE epoch then linear decay, mean pooling, tau = 0.05, maximum length 512, one epoch.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...data.root import DataRoot
from ..crops import CropCorpus
from .base import Batch
from .contrastive import ContrastiveMethod, ContrastiveOptions


@dataclass
class CropOptions(ContrastiveOptions):
    crop_sentences: int = 2  # t
    crop_min_chars: int = 100  # sentences outside [min, max] characters are dropped (§3.1)
    crop_max_chars: int = 250


class Crop(ContrastiveMethod):
    description = "cropping: two chunks of consecutive sentences of one document"
    data_kind = "documents"
    Options = CropOptions
    defaults = {"pooling": "mean", "optimizer": "adam", "lr": 2e-5, "batch_size": 64, "max_length": 512, "epochs": 1,
                "warmup_ratio": 0.1, "warmup_of": "epoch", "eval_steps": 0}

    def examples(self, root: DataRoot) -> Sequence[Any]:
        o = self.options
        return CropCorpus.build(list(super().examples(root)), o.crop_sentences, o.crop_min_chars, o.crop_max_chars,
                                source=", ".join(self.config.data))

    def example_lengths(self, examples: Sequence[Any], indices: list[int]) -> list[int] | None:
        return None  # the crops are drawn in batch(): a document's length says little of its crop's

    def batch(self, examples: Sequence[Any], indices: list[int], rng: random.Random) -> Batch:
        pairs = [examples.pair(i, rng) for i in indices]
        return Batch({"anchor": [a for a, _ in pairs], "positive": [b for _, b in pairs]})


class Dropout(Crop):
    description = "the cropping paper's dropout baseline: one chunk, two dropout masks"

    def batch(self, examples: Sequence[Any], indices: list[int], rng: random.Random) -> Batch:
        texts = [examples.single(i, rng) for i in indices]
        return Batch({"anchor": texts, "positive": list(texts)})
