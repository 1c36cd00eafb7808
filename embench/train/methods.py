"""The training methods and the model they train.

| method | positives | negatives | pooling (default) | paper |
|---|---|---|---|---|
| ``unsup-simcse`` | the same sentence twice, two dropout masks | in-batch | [CLS] + MLP in training only | SimCSE §3, Table A.1 |
| ``sup-simcse`` | NLI entailment | in-batch + contradictions (alpha) | [CLS] + MLP kept at test | SimCSE §4, Eq. 5/8 |
| ``crop`` | two chunks of t sentences of one document | in-batch | mean | cropping paper §3.1 |
| ``dropout`` | one chunk twice, two dropout masks | in-batch | mean | cropping paper §3.1 (baseline) |

Every view of a batch goes through the encoder in one forward pass (as SimCSE does), so dropout
masks differ between views. The MLP is ``Linear(h, h) + tanh``, newly initialised (SimCSE
footnote 9); with ``mlp: keep`` it is the model's own pooler head (re-initialised), so the saved
checkpoint applies it under embench's ``cls`` pooling.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from ..core.errors import EmbenchError
from ..core.registry import Registry
from ..models.pooling import NEEDS_ALL_LAYERS, POOLERS, PoolInput
from .crops import CropCorpus


@dataclass(frozen=True)
class Method:
    name: str
    data_kind: str  # sentences | triplets | documents
    views: Callable[[Any, list[int], random.Random], list[list[str]]]
    defaults: dict[str, Any] = field(default_factory=dict)
    description: str = ""


METHODS: Registry[Method] = Registry("training method")


def _same_twice(examples: list[str], idx: list[int], rng: random.Random) -> list[list[str]]:
    texts = [examples[i] for i in idx]
    return [texts, list(texts)]


def _triplets(examples: list[tuple[str, str, str]], idx: list[int], rng: random.Random) -> list[list[str]]:
    rows = [examples[i] for i in idx]
    return [[r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]]


def _crop_pairs(corpus: CropCorpus, idx: list[int], rng: random.Random) -> list[list[str]]:
    pairs = [corpus.pair(i, rng) for i in idx]
    return [[a for a, _ in pairs], [b for _, b in pairs]]


def _one_crop_twice(corpus: CropCorpus, idx: list[int], rng: random.Random) -> list[list[str]]:
    texts = [corpus.single(i, rng) for i in idx]
    return [texts, list(texts)]


# SimCSE Table A.1 (BERT-base) and the code's max_seq_length 32; cropping paper §3.1 (b = 64,
# lr 2e-5, mean pooling). The crop length is set so two 250-character sentences fit.
_SIMCSE = {"pooling": "cls_before_pooler", "mlp": "train", "lr": 3e-5, "batch_size": 64, "max_length": 32}
METHODS.add("unsup-simcse", Method("unsup-simcse", "sentences", _same_twice, _SIMCSE,
                                   "unsupervised SimCSE: dropout positives, MLP head in training only"), "simcse")
METHODS.add("sup-simcse", Method("sup-simcse", "triplets", _triplets,
                                 {**_SIMCSE, "pooling": "cls", "mlp": "keep", "lr": 5e-5, "batch_size": 128},
                                 "supervised SimCSE: NLI entailment positives, contradiction hard negatives"))
_CROP = {"pooling": "mean", "mlp": "none", "lr": 2e-5, "batch_size": 64, "max_length": 128}
METHODS.add("crop", Method("crop", "documents", _crop_pairs, _CROP,
                           "cropping: two chunks of consecutive sentences of one document"), "crops")
METHODS.add("dropout", Method("dropout", "documents", _one_crop_twice, _CROP,
                              "the cropping paper's dropout baseline: one chunk, two dropout masks"))


class ContrastiveModel(nn.Module):
    """An encoder, a pooler and the heads training needs (MLP, MLM)."""

    def __init__(self, encoder: nn.Module, pooling: str, mlp: str = "none", mlm_head: nn.Module | None = None):
        super().__init__()
        if mlp not in ("none", "train", "keep"):
            raise EmbenchError(f"--mlp must be none, train or keep, got {mlp!r}")
        self.encoder = encoder
        self.pooling = POOLERS.canonical(pooling)
        self._pool = POOLERS.get(pooling)
        self.mlp_mode = mlp
        hidden = encoder.config.hidden_size
        self.mlp = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh()) if mlp == "train" else None
        head = getattr(encoder, "pooler", None)
        if mlp == "keep":
            if self.pooling != "cls" or head is None or not isinstance(getattr(head, "dense", None), nn.Linear):
                raise EmbenchError(
                    "--mlp keep trains the model's own pooler head (BERT/RoBERTa) with --pooling cls; "
                    f"this model ({type(encoder).__name__}) with pooling {self.pooling!r} cannot"
                )
            head.dense.reset_parameters()  # SimCSE footnote 9: the MLP starts from random initialisation
        elif head is not None:
            for p in head.parameters():  # unused: keep it out of the optimiser and of DDP
                p.requires_grad_(False)
        self.use_head = self.pooling == "cls" and head is not None
        self.mlm_head = mlm_head
        self.num_layers = encoder.config.num_hidden_layers

    def embed(self, enc: dict[str, torch.Tensor]) -> torch.Tensor:
        all_layers = self.pooling in NEEDS_ALL_LAYERS
        out = self.encoder(**enc, output_hidden_states=all_layers, return_dict=True)
        hidden = tuple(out.hidden_states) if all_layers else (None,) * self.num_layers + (out.last_hidden_state,)
        head = self.encoder.pooler if self.use_head else None
        z = self._pool(PoolInput(hidden, enc["attention_mask"], self.num_layers, head))
        return self.mlp(z) if self.mlp is not None else z

    def forward(self, enc: dict[str, torch.Tensor], mlm_ids: torch.Tensor | None = None):
        z = self.embed(enc)
        if mlm_ids is None or self.mlm_head is None:
            return z, None
        masked = {**enc, "input_ids": mlm_ids}
        states = self.encoder(**masked, return_dict=True).last_hidden_state
        return z, self.mlm_head(states)


def freeze(encoder: nn.Module, embeddings: bool, first_layers: int) -> None:
    """Freeze the embedding layer and/or the first ``first_layers`` transformer layers (cropping
    paper §4, Fig. 4a: the embeddings are frozen and the last layers trained)."""
    if embeddings:
        emb = getattr(encoder, "embeddings", None) or getattr(encoder, "embed_tokens", None)
        if emb is None:
            raise EmbenchError(f"--freeze-embeddings: {type(encoder).__name__} has no embeddings module")
        for p in emb.parameters():
            p.requires_grad_(False)
    if first_layers:
        layers = _layers(encoder)
        if first_layers > len(layers):
            raise EmbenchError(f"--freeze-layers {first_layers}: the model has only {len(layers)} layers")
        for layer in layers[:first_layers]:
            for p in layer.parameters():
                p.requires_grad_(False)


def _layers(encoder: nn.Module) -> nn.ModuleList:
    for path in ("encoder.layer", "layers", "transformer.layer", "h"):
        mod: Any = encoder
        for part in path.split("."):
            mod = getattr(mod, part, None)
        if isinstance(mod, nn.ModuleList):
            return mod
    raise EmbenchError(f"--freeze-layers: cannot find the transformer layers of {type(encoder).__name__}")
