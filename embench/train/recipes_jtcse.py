"""JTCSE's recipes (Zong et al.): ``jtcse-bert`` and ``jtcse-roberta``, as the authors' scripts run them.

The paper defers its hyperparameters to an appendix that is not published, so most values come from
the scripts (tianyuzong/JTCSE ``train_jtcse_bert.py``, ``train_jtcse_roberta.py``): the loss terms in
their code forms (``model_dual.py``: ``unsup_infonce_loss`` and ``icnce`` on the 2B x 2B interleaved
views, ``LTN_loss`` with its 1e-4 floor and ratio / 2), ``torch.optim.AdamW(model.parameters(), lr)``
(so PyTorch's weight decay 0.01), no scheduler (a constant rate), no gradient clipping. The paper's
forms stay the method's defaults (``--set nce_form=paper`` ...). Each value beside its source.
"""

from __future__ import annotations

from typing import Any

from .recipes import Recipe

_TOWER2 = {"model": "the first tower: the authors start from their own SimCSE checkpoints (JTCSE_*_pretrained_encoder_1), "
                    "not published; give one with --model",
           "tower2": "the paper's two towers are different pre-trained encoders (the authors start from two SimCSE "
                     "checkpoints, JTCSE_bert_pretrained_encoder_1 and _2); give the second with --tower2 DIR"}


def _jtcse(script: str, lr: float, batch: int) -> dict[str, tuple[Any, str]]:
    """One tower pair's settings, each cited to the paper or to ``script``."""
    return {
        "method": ("jtcse", "JTCSE §III: twin towers with cross-attention layers, the loss of Eq. 15 (all weights 1)"),
        "model": (None, f"the authors start from their own SimCSE checkpoints ({script} --pretrain_subencoder_1), "
                        "not published: give --model"),
        "data": (["corpora"], f"JTCSE §IV.A: Wiki1M + the unlabelled SICK-R sentences ({script} --train_file "
                              "data/Wiki_for_JTCSE.txt: --train-data FILE); 'corpora' is the data root's stand-in"),
        "optimizer": ("adamw", f"{script}: torch.optim.AdamW(model.parameters(), lr)"),
        "lr": (lr, f"{script} --lr {str(lr).replace('e-0', 'e-')} (the paper defers it to its unpublished Appendix I)"),
        "batch_size": (batch, f"{script} --batch_size_train {batch}"),
        "epochs": (1, f"{script} --epochs 1"),
        "max_length": (64, f"{script} --max_len 64"),
        "pooling": ("cls_before_pooler", f"JTCSE §III.C: the last hidden state's [CLS], no pooler at inference ({script} "
                                         "scores last_hidden_state[:, 0])"),
        "warmup_ratio": (0.0, f"{script}: no scheduler, so no warm-up"),
        "lr_schedule": ("constant", f"{script}: no scheduler, the rate stays constant"),
        "weight_decay": (0.01, f"{script}: torch.optim.AdamW with PyTorch's default weight_decay 0.01"),
        "grad_clip": (0.0, f"{script}: loss.backward() then optimizer.step(), no clipping"),
        "precision": ("fp32", f"{script}: no autocast, no loss scale (--precision bf16-mixed for speed on a GPU)"),
        "eval_steps": (100, f"{script} --eval_step 100 (saved on a better STS-B dev Spearman)"),
        "eval_tasks": (["STSBenchmark-dev"], f"JTCSE §IV.A: the STS-B validation Spearman saves the checkpoint "
                                             f"({script} --dev_file sts-dev.csv)"),
        "temperature": (0.05, "JTCSE §III.C (tau = 0.05, after SimCSE); model_dual.py temp=0.05"),
        "cross_layers": (6, f"JTCSE §V.D, Table IX (6 CAELs best, 79.70); {script} --num_ca_layers 6"),
        "nce_form": ("code", f"model_dual.py unsup_infonce_loss, as {script} calls it: the 2B x 2B interleaved views "
                             "(Eq. 11: --set nce_form=paper)"),
        "icnce_form": ("code", f"model_dual.py icnce, as {script} calls it (Eq. 12: --set icnce_form=paper)"),
        "tmc_form": ("code", f"model_dual.py LTN_loss, as {script} calls it: the 1e-4 floor, ratio / 2 "
                             "(Eq. 13: --set tmc_form=paper)"),
    }


JTCSE_BERT = Recipe.cited(
    "jtcse-bert", "JTCSE on two BERT-base towers (each first trained with unsupervised SimCSE): one epoch",
    "JTCSE §III.C and Eq. 15 (all weights 1, tau 0.05), §IV.A (the STS-B dev checkpoint) and 6 CAELs (Table IX); the "
    "authors' train_jtcse_bert.py (AdamW with PyTorch's defaults, lr 1.3e-6 constant: no scheduler, no clipping; batch "
    "64, 1 epoch, max_len 64; the code forms of the three losses; STS-B dev of the summed [CLS] every 100 steps, the "
    "best kept). The paper's data is Wiki1M + the SICK-R sentences (--train-data FILE)",
    _jtcse("train_jtcse_bert.py", 1.3e-6, 64), _TOWER2)

JTCSE_ROBERTA = Recipe.cited(
    "jtcse-roberta", "JTCSE on two RoBERTa-base towers: one epoch, batch 256",
    "the authors' train_jtcse_roberta.py (AdamW, lr 1e-6 constant, batch 256, 1 epoch, max_len 64, 6 CAELs, STS-B "
    "dev every 100 steps); otherwise as jtcse-bert",
    _jtcse("train_jtcse_roberta.py", 1e-6, 256), _TOWER2)
