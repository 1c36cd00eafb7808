"""JTCSE (Zong et al., "JTCSE: Joint Tensor-Modulus Constraints and Cross-Attention for Unsupervised
Contrastive Learning of Sentence Embeddings"): two towers trained together.

Each sentence goes twice through each tower (two dropout views). The loss is Eq. 15:

    L = w_nce * (L_NCE(I) + L_NCE(II)) + w_icnce * L_ICNCE + w_ictm * L_ICTM

with every weight 1 in the paper (each an option, for the ablations of Tables VIII-X) and
:mod:`embench.train.jtcse_losses` giving each term in the paper's form (default) or the authors'
code form (``nce_form``, ``icnce_form``, ``tmc_form``). The modulus loss L_ICTM reads the towers'
pooler outputs (``modulus_on: pooler``; ``cls`` uses the [CLS] of the last hidden state, the Fig. 8
variant, for models without a pooler head). ``cross_layers`` CAELs (Eq. 7: one every
``num_layers / cross_layers`` layers; 0 = off, i.e. TNCSE) join the towers in training only; the
wiring after the context tensor is embench's choice, documented in :mod:`embench.train.cross_attention`
and :mod:`embench.train.twin`: a separate cross stream per tower from the first CAEL to the last
layer, each context tensor through the rest of its own layer; the main streams are untouched.
``remove_layernorm`` removes both LayerNorms of the last n layers of both towers (Fig. 8).

The exported model is the twin as one: its vector is [CLS]_I + [CLS]_II (an ensemble folder,
``embench.models.ensemble``). Defaults follow the authors' ``train_jtcse_bert.py``: AdamW, lr 1.3e-6,
batch 64, one epoch, max length 64, STS-B dev of the summed [CLS] every 100 steps, tau = 0.05; the loss
terms in the paper's forms. The ``jtcse-bert`` / ``jtcse-roberta`` recipes run what the scripts run: the code
forms, a constant learning rate, no gradient clipping, and a second tower of its own (``--tower2``).
"""

from __future__ import annotations

import dataclasses
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ...core.errors import EmbenchError
from ...models.ensemble import write_ensemble
from ...models.layer_stack import transformer_layers
from ...models.layernorm import remove_layernorms
from .. import checkpoints, distributed
from .. import jtcse_losses as J
from ..adapters import exportable
from ..backbone import load_backbone
from ..cross_attention import cross_layer_indices
from ..distributed import DistInfo
from ..module import unwrap
from ..temperature import check_temperature
from ..twin import TwinTowers
from .base import Batch, Logs, Method, Outputs

TOWER_DIRS = ("tower-1", "tower-2")
log = logging.getLogger(__name__)


@dataclass
class JTCSEOptions:
    tower2: str | None = None  # the second tower's checkpoint (default: a second copy of --model)
    temperature: float = 0.05  # tau, after SimCSE (§III.C)
    cross_layers: int | None = None  # number of CAELs (Eq. 7); default half the layers (k = 2: the paper's best, 6 of 12, Table IX)
    nce_weight: float = 1.0  # Eq. 15 weights (all 1 in the paper)
    icnce_weight: float = 1.0
    ictm_weight: float = 1.0
    nce_form: str = "paper"  # paper (B x B, SimCSE) | code (2B x 2B unsup_infonce_loss)
    icnce_form: str = "paper"  # paper (Eq. 12 on first views) | code (2B x 2B icnce)
    tmc_form: str = "paper"  # paper (Eq. 13) | code (negative cosine -> 1e-4, ratio / 2)
    modulus_on: str = "pooler"  # pooler (Eq. 13) | cls (the last hidden state's [CLS], Fig. 8's variant)
    remove_layernorm: int = 0  # remove the LayerNorms of the last n layers (Fig. 8)

    def __post_init__(self) -> None:  # said as --set KEY: only --cross-layers of these has a flag, and --set takes all
        for name in ("nce_form", "icnce_form", "tmc_form"):
            if getattr(self, name) not in J.FORMS:
                raise EmbenchError(f"--set {name} must be paper or code, got {getattr(self, name)!r}")
        if self.modulus_on not in ("pooler", "cls"):
            raise EmbenchError(f"--set modulus_on must be pooler or cls, got {self.modulus_on!r}")
        check_temperature(self.temperature)
        for name in ("nce_weight", "icnce_weight", "ictm_weight", "cross_layers", "remove_layernorm"):
            if (getattr(self, name) or 0) < 0:
                raise EmbenchError(f"--set {name} must be >= 0, got {getattr(self, name)}")


class JTCSE(Method):
    description = "JTCSE: twin towers, tensor-modulus constraint, cross-attention in training (summed [CLS] at test)"
    data_kind = "sentences"
    Options = JTCSEOptions
    defaults = {"pooling": "cls_before_pooler", "optimizer": "adamw", "lr": 1.3e-6, "batch_size": 64, "max_length": 64,
                "epochs": 1, "warmup_ratio": 0.0, "eval_steps": 100}

    # -- model -----------------------------------------------------------------------------------
    def build(self, device: str) -> nn.Module:
        cfg, o = self.config, self.options
        one = load_backbone(cfg, device)
        if o.tower2 is None:
            log.warning("jtcse without --tower2: the second tower is a copy of --model, so both towers start equal; "
                        "the paper's towers are two different pre-trained encoders")
        two = load_backbone(dataclasses.replace(cfg, model=o.tower2 or cfg.model), device)
        check_twins(cfg.model, o.tower2 or cfg.model, one, two)
        layers = [transformer_layers(b.encoder) for b in (one, two)]
        n = len(layers[0])
        count = (n // 2 if n % 2 == 0 else 1) if o.cross_layers is None else o.cross_layers  # k = 2 where it can be
        cross_at = cross_layer_indices(len(layers[0]), count)
        if o.remove_layernorm:
            for lay in layers:
                remove_layernorms(lay, o.remove_layernorm)
        uses_pooler = o.modulus_on == "pooler" and o.ictm_weight > 0
        if uses_pooler:
            for flag, name, b in (("--model", cfg.model, one), ("--tower2" if o.tower2 else "--model", o.tower2 or cfg.model, two)):
                if getattr(b.encoder, "pooler", None) is None or not pooler_saved(name):
                    raise EmbenchError(
                        f"{flag} {name}: {type(b.encoder).__name__} has no pooler head, and the modulus loss "
                        "(L_ICTM, Eq. 13) reads pooler outputs; use its [CLS] variant (--set modulus_on=cls, Fig. 8) "
                        "or turn the loss off (--set ictm_weight=0)")
        return TwinTowers(one.encoder, two.encoder, one.tokenizer, max_length=cfg.max_length,
                          prompt=cfg.prompt or one.family.prompt, cross_at=cross_at, pooler=uses_pooler).to(device)

    def batch(self, examples: Sequence[Any], indices: list[int], rng: random.Random) -> Batch:
        texts = [examples[i] for i in indices]
        # R of Eq. 12, drawn per step from the step's seeded generator (reproducible, resumable)
        return Batch({"anchor": texts, "positive": list(texts)}, extras={"anchor_first": rng.randint(0, 1) == 1})

    def forward(self, module: nn.Module, batch: Batch) -> Outputs:
        """Both views of the batch through both towers in one call; reps are keyed ``<tensor>/<view>``
        (B rows each), so micro-batches and processes concatenate view by view."""
        got = module(self.pass_texts(batch))  # anchor's texts, then positive's (its batch's two views)
        reps = {}
        for key, value in got.items():
            a, b = value.float().chunk(2)
            reps[f"{key}/a"], reps[f"{key}/b"] = a, b
        return Outputs(reps)

    def objective(self, outputs: Outputs, batch: Batch, dist: DistInfo) -> tuple[torch.Tensor, Logs]:
        o = self.options
        # every process computes the loss of the GLOBAL batch: the gather's backward sums the gradients
        # over processes and DDP averages them, which gives the gradient of that one loss
        both = {k[:-2]: torch.cat([distributed.gather_with_grad(outputs.reps[k[:-2] + "/a"]),
                                   distributed.gather_with_grad(outputs.reps[k[:-2] + "/b"])])
                for k in outputs.reps if k.endswith("/a")}
        anchor_first = batch.extras.get("anchor_first", True)
        if isinstance(anchor_first, list):  # merged micro-batches: the step's R is the first one's
            anchor_first = anchor_first[0]
        logs: Logs = {}
        loss = both["cls_1"].new_zeros(())
        if o.nce_weight:
            nce = J.nce(both["cls_1"], o.temperature, o.nce_form) + J.nce(both["cls_2"], o.temperature, o.nce_form)
            loss, logs["l_nce"] = loss + o.nce_weight * nce, nce.detach()
        if o.icnce_weight:
            ic = J.icnce(both["cls_1"], both["cls_2"], both.get("cross_1"), both.get("cross_2"), bool(anchor_first),
                         o.temperature, o.icnce_form)
            loss, logs["l_icnce"] = loss + o.icnce_weight * ic, ic.detach()
        if o.ictm_weight:
            p1, p2 = (both["pool_1"], both["pool_2"]) if o.modulus_on == "pooler" else (both["cls_1"], both["cls_2"])
            tm = J.ictm(both["cls_1"], both["cls_2"], p1, p2, o.tmc_form)
            loss, logs["l_ictm"] = loss + o.ictm_weight * tm, tm.detach()
        return loss, logs

    # -- evaluation and export -------------------------------------------------------------------
    def encoder_for_eval(self, module: nn.Module):
        return unwrap(module).view

    def export(self, module: nn.Module, folder: Path, meta: dict[str, Any]) -> Path:
        """The twin as one model: ``tower-1/`` and ``tower-2/`` (each a checkpoint of its own, [CLS]
        pooling) and ``ensemble.json`` (weights 1 and 1): every command loads the folder as
        [CLS]_I + [CLS]_II."""
        twin = unwrap(module)
        o = self.options
        members = [{"model": sub, "weight": 1.0, "pooling": "cls_before_pooler", "remove_layernorm": o.remove_layernorm}
                   for sub in TOWER_DIRS]

        def write(tmp: Path) -> None:
            for sub, enc in zip(TOWER_DIRS, twin.towers, strict=True):
                # the run's scores are the twin's (both towers summed), not this tower's: the card says so (twin_of),
                # as scoring each tower alone would cost two more evaluations per kept step
                checkpoints.save_model_folder(exportable(enc), twin.tokenizer, tmp / sub, pooling="cls_before_pooler",
                                              max_length=self.export_max_length(enc, twin.tokenizer),
                                              meta={**meta, "prompt": twin.view.prompt, "twin_of": "..",
                                                    "remove_layernorm": o.remove_layernorm})

        return write_ensemble(folder, members, {**meta, "method": "jtcse", "options": dataclasses.asdict(o)}, write)


def pooler_saved(name: str) -> bool:
    """Whether the checkpoint's weights hold a pooler head (transformers initialises a missing one at
    random, which would make the modulus loss meaningless). Unknown (no safetensors file): True."""
    from safetensors import safe_open

    from ...models.model_names import resolve_model_path
    from ...models.st_folder import sentence_transformers_config

    folder, _, _ = resolve_model_path(name)
    if folder is None:
        return True
    st = sentence_transformers_config(folder)
    files = sorted(Path(st["transformer_path"] if st else folder).glob("*.safetensors"))
    if not files:
        return True
    for f in files:
        with safe_open(str(f), "pt") as sf:
            if any(".pooler." in f".{k}" for k in sf.keys()):
                return True
    return False


def check_twins(name_1: str, name_2: str, one: Any, two: Any) -> None:
    """Twin towers share tokens position by position (Eq. 10 mixes values across towers): the
    tokenizers' vocabularies and the models' hidden sizes and depths must be the same."""
    problems = []
    if one.tokenizer.get_vocab() != two.tokenizer.get_vocab():
        problems.append(f"their tokenizers differ ({len(one.tokenizer)} vs {len(two.tokenizer)} tokens)")
    for attr in ("hidden_size", "num_hidden_layers", "num_attention_heads"):
        a, b = getattr(one.encoder.config, attr, None), getattr(two.encoder.config, attr, None)
        if a != b:
            problems.append(f"{attr} {a} vs {b}")
    if problems:
        raise EmbenchError(f"--model {name_1} and --tower2 {name_2} cannot be twin towers: {'; '.join(problems)}. "
                           "Twin towers need one tokenizer and one shape (an ensemble at inference may mix them: "
                           "--model 'ensemble:A+B')")
