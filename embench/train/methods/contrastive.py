"""InfoNCE over views of one batch: what SimCSE and the cropping paper share.

View ``anchor`` is scored against every ``positive`` of the global batch (and every ``hard``
negative when the batch has them): SimCSE Eq. 1/4/5/8 and the cropping paper's Eq. 1, with
in-batch negatives gathered over processes. An optional MLM term is added with weight lambda
(SimCSE App. D).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .. import distributed, losses
from ..distributed import DistInfo
from ..temperature import check_temperature
from .base import Batch, Logs, Method, Outputs


@dataclass
class ContrastiveOptions:
    temperature: float = 0.05  # SimCSE Table D.1; cropping paper §3.1
    mlm_weight: float = 0.0  # lambda of SimCSE App. D: loss + lambda * MLM (0 = off)
    mlm_probability: float = 0.15

    def __post_init__(self) -> None:
        from ...core.errors import EmbenchError

        check_temperature(self.temperature)
        if self.mlm_weight < 0 or not 0 < self.mlm_probability < 1:
            raise EmbenchError("--mlm-weight must be >= 0 and --mlm-probability in (0, 1)")


class ContrastiveMethod(Method):
    """Views ``anchor``, ``positive`` (and ``hard``) of each example; InfoNCE over the global batch."""

    Options = ContrastiveOptions
    hard_negative_weight: float = 1.0

    def build(self, device: str) -> nn.Module:
        return self.sentence_model(device, mlm=self.options.mlm_weight > 0)

    def splits_by_text(self) -> bool:
        return not self.options.mlm_weight and type(self).forward is ContrastiveMethod.forward  # MLM: an aux loss

    def forward(self, module: nn.Module, batch: Batch) -> Outputs:
        if not self.options.mlm_weight:
            return super().forward(module, batch)
        names = list(batch.texts)
        z, logits, labels = module(self.pass_texts(batch), self.options.mlm_probability)
        mlm = losses.mlm_loss(logits, labels)
        return Outputs(dict(zip(names, z.float().chunk(len(names)), strict=True)), self.options.mlm_weight * mlm,
                       {"mlm_loss": mlm.detach()})

    def objective(self, outputs: Outputs, batch: Batch, dist: DistInfo) -> tuple[torch.Tensor, Logs]:
        reps = outputs.reps
        n = reps["anchor"].shape[0]
        positives = distributed.gather_with_grad(reps["positive"])
        hard = distributed.gather_with_grad(reps["hard"]) if "hard" in reps else None
        loss = losses.info_nce(reps["anchor"], positives, self.options.temperature, hard,
                               self.hard_negative_weight, offset=dist.rank * n)
        return loss, {}
