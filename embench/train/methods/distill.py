"""Distillation into one tower: MSE between the student's pooled vector and a teacher's vector.

JTCSE §V ("JTCSE D", "+UC D"), after EDFSE: the twin tower (or its ensemble with an outside
checkpoint) is distilled "through MSE loss to a naive BERT". The teacher is any model embench loads
(``ensemble:A+B``, ``ensemble:0.3*A+0.7*B``, a ``jtcse`` output folder, a single checkpoint); its
vectors of every training sentence are computed ONCE before training, through the encoding engine
and its disk cache (a second run, or an evaluation of the teacher, reads them back), never at
each step. The paper gives no distillation hyper-parameters; the defaults are unsupervised SimCSE's
(lr 3e-5, batch 64, max length 32, [CLS] pooling, STS-B dev every 250 steps).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from ...core.errors import EmbenchError
from ...data.root import DataRoot
from ..distributed import DistInfo
from .base import Batch, Logs, Method, Outputs


@dataclass
class DistillOptions:
    teacher: str | None = None  # any model embench loads; required
    teacher_max_length: int | None = None  # default: the teacher's own
    teacher_batch_size: int = 128
    teacher_cache: bool = True  # read and write the teacher's vectors in the embedding cache


@dataclass
class TeacherCorpus:
    """The training sentences and the teacher's vector of each (row i is sentence i)."""

    texts: list[str]
    vectors: torch.Tensor
    teacher: str

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, i: int) -> str:
        return self.texts[i]


class Distill(Method):
    description = "distillation: MSE from the student's vector to a teacher's (e.g. an ensemble), computed once"
    data_kind = "sentences"
    Options = DistillOptions
    defaults = {"pooling": "cls_before_pooler", "lr": 3e-5, "batch_size": 64, "max_length": 32, "epochs": 1,
                "warmup_ratio": 0.0, "eval_steps": 250}

    def examples(self, root: DataRoot) -> Sequence[Any]:
        o = self.options
        if not o.teacher:
            raise EmbenchError("--method distill needs --teacher MODEL (e.g. 'ensemble:A+B' or a jtcse output folder)")
        texts = list(super().examples(root))
        return TeacherCorpus(texts, teacher_vectors(o.teacher, texts, self.config.device, o.teacher_max_length,
                                                    o.teacher_batch_size, o.teacher_cache), o.teacher)

    def batch(self, examples: Sequence[Any], indices: list[int], rng: random.Random) -> Batch:
        return Batch({"student": [examples[i] for i in indices]}, {"teacher": examples.vectors[indices]})

    def objective(self, outputs: Outputs, batch: Batch, dist: DistInfo) -> tuple[torch.Tensor, Logs]:
        student, teacher = outputs.reps["student"], batch.tensors["teacher"].to(outputs.reps["student"].device)
        if student.shape[-1] != teacher.shape[-1]:
            raise EmbenchError(f"--teacher {self.options.teacher}: its vectors have {teacher.shape[-1]} dimensions, the "
                               f"student's {student.shape[-1]}; MSE distillation needs one size")
        return F.mse_loss(student.float(), teacher.float()), {}


def teacher_vectors(teacher: str, texts: list[str], device: str | None, max_length: int | None, batch_size: int,
                    use_cache: bool) -> torch.Tensor:
    """The teacher's vectors of ``texts``, through the engine (and each ensemble member's engine) and the cache."""
    from ...encoding.cache import default_cache_dir
    from ...encoding.engine import Engine
    from ...models.loader import load_model

    enc = load_model(teacher, device=device, max_length=max_length)
    cache = default_cache_dir() if use_cache else None
    engine = Engine(enc, batch_size=batch_size, cache_dir=cache)
    if hasattr(enc, "use_engines"):
        enc.use_engines(lambda member: Engine(member, batch_size=batch_size, cache_dir=cache))
    return torch.from_numpy(engine.embed(texts)).float()
