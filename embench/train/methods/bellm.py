"""BeLLM (Li & Li, 2024): a decoder LLM with bidirectional last layer(s), LoRA, NLI contrastive learning.

* Model: the causal LM with its last ``bidirectional_last`` layers bidirectional (Eq. 4; the paper: the
  last layer only), read as ``bidirectional_mode`` (:mod:`embench.models.bidirectional`): by default
  ``sum``, Eq. 5 as the paper writes it (the causal stack plus the last layer run again without the
  causal mask on the embeddings, summed before the final norm); ``sum-code`` the authors' AnglE code,
  ``billm`` the billm package their README trains with, ``mask`` one stack with the causal mask removed
  (for a last-token vector and K = 1, the paper's "no bi-layer" ablation). The representative-word
  prompt ``The representative word for {text} is:"`` (§3.2) and the last token's state as the sentence vector.
* Loss (Eq. 6): supervised contrastive learning over NLI triplets: each anchor against every
  positive and every hard negative of the batch, cosine / tau (tau is not given in the paper;
  0.05 = 1 / AnglE's ibn_tau 20, the authors' code). Optionally AnglE's objectives on the pairs
  (anchor, positive) labelled 1 and (anchor, hard negative) labelled 0: CoSENT (``cosine_weight``)
  and the angle objective (``angle_weight``), both from sentence-transformers (``CoSENTLoss`` and
  ``AnglELoss``, scale 20). Total = ibn_weight * Eq. 6 + cosine_weight * CoSENT + angle_weight * angle.
* Training: LoRA adapters through peft on every linear layer (r 32, alpha 32, dropout 0.1, lr 2e-4;
  §4.1). The kept checkpoint is the adapter alone (``adapter_config.json``, its weights) with
  ``embench_adapter.json`` naming the base model and the bidirectional setting (K and mode), so
  ``--model BASE --adapter DIR`` (or ``--model DIR``) loads it back, bidirectional again.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ...core.atomic import replace_folder
from ...core.errors import EmbenchError
from ...models.bidirectional import DEFAULT_MODE, check_mode, make_bidirectional
from ...models.families import PROMPTS, is_decoder, num_layers
from ...models.lora_adapter import write_adapter_meta
from .. import distributed, losses
from ..adapters import is_peft
from ..distributed import DistInfo
from ..model_card import write_model_card
from .base import Batch, Logs, Outputs
from .contrastive import ContrastiveMethod, ContrastiveOptions

ANGLE_SCALE = 20.0  # AnglE's cosine_tau / angle_tau (sentence-transformers' scale)


@dataclass
class BeLLMOptions(ContrastiveOptions):
    bidirectional_last: int = 1  # the paper: the last layer only (Table 4: none -1.02, all -10.71)
    bidirectional_mode: str = DEFAULT_MODE  # "sum": Eq. 5 as the paper writes it (models/bidirectional.py)
    ibn_weight: float = 1.0  # Eq. 6 (the authors' README: --ibn_w 1.0)
    cosine_weight: float = 0.0  # CoSENT (AnglE's cosine objective)
    angle_weight: float = 0.0  # AnglE's angle objective (the README's tip: > 0 helps)
    # each anchor's in-batch negatives: the loss_group examples of its own part of the batch (0: the whole batch).
    # The authors' AnglE computes each GPU's loss over that GPU's examples only (no gather): on 4 GPUs of 256, one
    # step of 1,024 is four losses of 256, averaged; batch_size 1024 with loss_group 256 is that step
    loss_group: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.bidirectional_last < 0:
            raise EmbenchError(f"--bidirectional-last must be 0 or more, got {self.bidirectional_last}")
        self.bidirectional_mode = check_mode(self.bidirectional_mode)
        weights = (self.ibn_weight, self.cosine_weight, self.angle_weight)
        if min(weights) < 0 or not sum(weights) > 0:
            raise EmbenchError(f"the loss weights ibn/cosine/angle must be >= 0 and not all 0, got {weights}")
        if isinstance(self.loss_group, bool) or not isinstance(self.loss_group, int) or self.loss_group < 0:
            raise EmbenchError(f"--set loss_group must be 0 (the whole batch) or a number of examples, got {self.loss_group!r}")


def _other_groups(n: int, total: int, offset: int, group: int, device: torch.device) -> torch.Tensor | None:
    """Which candidates (positives, then hard negatives) lie outside each anchor's group of ``group`` examples:
    removed from its softmax, so the mean loss is the mean of each group's own InfoNCE; None for one group."""
    if not group or group >= total:
        return None
    rows = (torch.arange(n, device=device) + offset) // group
    other = rows[:, None] != (torch.arange(total, device=device) // group)[None, :]
    return torch.cat([other, other], dim=1)


def pair_ranking_loss(anchors: torch.Tensor, positives: torch.Tensor, hard: torch.Tensor, kind: str) -> torch.Tensor:
    """AnglE's CoSENT (``cosine``) or angle (``angle``) objective on the pairs (anchor, positive) = 1 and
    (anchor, hard negative) = 0, through sentence-transformers' implementations (scale 20)."""
    try:
        from sentence_transformers.sentence_transformer.losses import AnglELoss, CoSENTLoss
    except ImportError:  # sentence-transformers < 6
        from sentence_transformers.losses import AnglELoss, CoSENTLoss
    loss = (CoSENTLoss if kind == "cosine" else AnglELoss)(model=None, scale=ANGLE_SCALE)
    left = torch.cat([anchors, anchors]).float()
    right = torch.cat([positives, hard]).float()
    labels = torch.cat([torch.ones(len(anchors)), torch.zeros(len(anchors))]).to(left.device)
    return loss.compute_loss_from_embeddings([left, right], labels)


class BeLLM(ContrastiveMethod):
    description = "BeLLM: decoder LLM, bidirectional last layer(s), representative-word prompt, LoRA, NLI contrastive"
    trains_decoders = True
    data_kind = "triplets"
    Options = BeLLMOptions
    exports_adapter_alone = True  # export() saves the LoRA adapter and names the base
    # the paper's (§3.2, §4.1): prompt, last token, LoRA 32/32/0.1, lr 2e-4; max length 60 is the authors' README
    defaults = {"pooling": "last_token", "prompt": PROMPTS["bellm"], "lr": 2e-4, "lora_r": 32, "lora_alpha": 32.0,
                "lora_dropout": 0.1, "batch_size": 64, "max_length": 60, "epochs": 1, "warmup_ratio": 0.0,
                "eval_steps": 0}

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        g, batch = self.options.loss_group, config.batch_size  # checked before any weight is read
        if g and batch and g < batch and batch % g:
            raise EmbenchError(f"--set loss_group={g} must divide --batch-size {batch} (each loss over {g} examples)")

    def build(self, device: str) -> nn.Module:
        model = self.sentence_model(device)
        if not is_decoder(model.encoder.config):
            raise EmbenchError(f"--method bellm trains a decoder LLM; {self.config.model} is an encoder "
                               "(its attention is already bidirectional)")
        layers = num_layers(model.encoder.config)
        if self.options.bidirectional_last > layers:
            raise EmbenchError(f"--bidirectional-last {self.options.bidirectional_last} is more than the {layers} layers "
                               f"of {self.config.model}")
        make_bidirectional(model.encoder, self.options.bidirectional_last, self.options.bidirectional_mode)
        return model

    def batch(self, examples: Sequence[Any], indices: list[int], rng: random.Random) -> Batch:
        rows = [examples[i] for i in indices]
        return Batch({"anchor": [r[0] for r in rows], "positive": [r[1] for r in rows], "hard": [r[2] for r in rows]})

    def objective(self, outputs: Outputs, batch: Batch, dist: DistInfo) -> tuple[torch.Tensor, Logs]:
        o, reps = self.options, outputs.reps
        logs: Logs = {}
        total = reps["anchor"].new_zeros(())
        if o.ibn_weight:
            n = reps["anchor"].shape[0]
            positives = distributed.gather_with_grad(reps["positive"])
            hard = distributed.gather_with_grad(reps["hard"])
            ibn = losses.info_nce(reps["anchor"], positives, o.temperature, hard, 1.0, offset=dist.rank * n,  # Eq. 6
                                  exclude=_other_groups(n, positives.shape[0], dist.rank * n, o.loss_group, positives.device))
            total = total + o.ibn_weight * ibn
            logs["ibn_loss"] = ibn.detach()
        for kind, weight in (("cosine", o.cosine_weight), ("angle", o.angle_weight)):
            if weight:
                part = pair_ranking_loss(reps["anchor"], reps["positive"], reps["hard"], kind)
                total = total + weight * part
                logs[f"{kind}_loss"] = part.detach()
        return total, logs

    def export(self, module: nn.Module, folder: Path, meta: dict[str, Any]) -> Path:
        """The LoRA adapter and what loading it back needs; a run without LoRA keeps the whole model."""
        m = self.encoder_for_eval(module)
        if not is_peft(m.encoder):
            return super().export(module, folder, {**meta, **self.bidirectional_meta()})
        from ...models.loader import load_model

        folder = Path(folder)
        tmp = folder.with_name(folder.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        m.encoder.save_pretrained(tmp)  # peft: adapter_config.json + adapter_model.safetensors only
        base = load_model(self.config.model)  # config and fingerprint only: the weights are not read
        saved = {**meta, "base_model": self.config.model, "base_fingerprint": base.fingerprint,
                 **self.bidirectional_meta(), "prompt": m.prompt, "pooling": m.pooling, "max_length": m.max_length}
        write_adapter_meta(tmp, **saved)
        write_model_card(tmp, final=folder, meta=saved, pooling=m.pooling, max_length=m.max_length, st_modules=None,
                         why_not_st=None, prompt_prefix=None, adapter_of=self.config.model)  # not peft's blank template
        return replace_folder(tmp, folder)

    def bidirectional_meta(self) -> dict[str, Any]:
        """What a checkpoint keeps so that it loads back in the attention it was trained with."""
        return {"bidirectional_last": self.options.bidirectional_last, "bidirectional_mode": self.options.bidirectional_mode}
