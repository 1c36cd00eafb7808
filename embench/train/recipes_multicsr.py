"""MultiCSR's stage-3 recipes (Wang et al.): ``multicsr`` (the paper's Eq. 5-7) and ``multicsr-code`` (the
authors' loss as Circle-Ming/MultiCSR ``simcse/models.py`` computes it).

Each value beside its source: the paper (§3.3, §4.1), the authors' ``run.sh``, or the README's example
command (``run.sh -m bert-base-uncased -d nli -e 3 -b 128 -r 5e-5 -l 32 -y 42 -g 1 -t 25 -p 0.95``). Where the
example and the paper differ (batch 128 on one GPU and sigma 0.95 there) ``multicsr`` keeps the paper's values and
``multicsr-code``, the authors' run, the example's.
"""

from __future__ import annotations

from typing import Any

from .recipes import Recipe

_EXAMPLE = "the README's example command (run.sh ... -e 3 -b 128 -r 5e-5 -l 32 -g 1 -t 25 -p 0.95)"
_MULTICSR: dict[str, tuple[Any, str]] = {
    "method": ("sup-simcse", "MultiCSR §3.3, Eq. 5: supervised SimCSE, the generated contradiction as the hard negative"),
    "model": ("bert-base-uncased", "MultiCSR §4.1 (the BERT-base backbone)"),
    "batch_size": (256, "MultiCSR §4.1 (batch 256; the README's example -b 128: --batch-size 128)"),
    "temperature": (0.05, "MultiCSR §4.1 (tau = 0.05); run.sh --temp 0.05"),
    "sigma": (0.9, "MultiCSR §4.1 (sigma = 0.9, Eq. 6; the README's example -p 0.95: --sigma 0.95)"),
    "false_negative_filter": ("all-MiniLM-L6-v2", "MultiCSR §4.1 masks with SimCSE of the matching backbone (the README: "
                                                  "princeton-nlp/unsup-simcse-bert-base-uncased, not here offline): "
                                                  "all-MiniLM-L6-v2 stands in; --false-negative-filter changes it"),
    "fn_guide_pooling": ("cls_before_pooler", "simcse/models.py (cl_forward with is_mask=True): the frozen encoder's raw "
                                              "[CLS] state, no MLP; --set fn_guide_pooling=null pools it as it loads"),
    "pooling": ("cls_before_pooler", "run.sh --pooler_type cls --mlp_only_train: [CLS] without the MLP at test"),
    "mlp": ("train", "run.sh --mlp_only_train: the MLP in training only"),
    "hard_negative_weight": (1.0, "MultiCSR §3.3, Eq. 5: the hard negative unweighted"),
    "lr": (5e-5, f"{_EXAMPLE}: -r 5e-5"),
    "epochs": (3, f"{_EXAMPLE}: -e 3"),
    "max_length": (32, f"{_EXAMPLE}: -l 32"),
    "warmup_ratio": (0.0, "run.sh sets no warm-up: Hugging Face Trainer's default 0 (its SimCSE train.py)"),
    "eval_steps": (25, f"{_EXAMPLE}: -t 25, run.sh's --eval_steps"),
    "precision": ("auto", "run.sh --fp16 (fp16 autocast with a loss scale: --precision fp16-mixed); auto is bf16 autocast "
                          "on a GPU that has it (no loss scale needed) and fp32 on a CPU, where fp16 is emulated"),
    "eval_tasks": (["STSBenchmark-dev"], "MultiCSR §4.1: the best model on STS-B dev, after SimCSE (run.sh "
                                         "--metric_for_best_model stsb_spearman)"),
}

MULTICSR = Recipe.cited(
    "multicsr", "MultiCSR stage 3: supervised SimCSE on generated, curated triplets (--train-data FILE) with the "
                "frozen encoder's in-batch false negatives masked",
    "from the paper (§4.1 'Experiment Setup', Eq. 5-7): batch 256, tau 0.05, sigma 0.9, the best checkpoint on "
    "STS-B dev, hard negatives from the generated contradictions. From the authors' run.sh (Circle-Ming/MultiCSR): "
    "[CLS] with the MLP in training only (--pooler_type cls --mlp_only_train); from its README's example command "
    "(run.sh -e 3 -r 5e-5 -l 32 -t 25): lr 5e-5, 3 epochs, 32 tokens, STS-B dev every 25 steps (the example's -b 128 "
    "and -p 0.95 differ from the paper's batch 256 and sigma 0.9, which are kept: --batch-size 128 --sigma 0.95); from "
    "its simcse/models.py (cl_forward with is_mask=True): the frozen encoder's raw [CLS] state, no MLP "
    "(fn_guide_pooling cls_before_pooler; --set fn_guide_pooling=null pools it as it loads). The paper's frozen "
    "encoder is SimCSE of the matching backbone (the README: princeton-nlp/unsup-simcse-bert-base-uncased; not here "
    "offline): all-MiniLM-L6-v2 stands in, read at its raw [CLS] as the code reads SimCSE's; --false-negative-filter "
    "changes it",
    _MULTICSR)

MULTICSR_CODE = Recipe.cited(
    "multicsr-code", "MultiCSR stage 3 as the authors' code computes it: masked logits x 0, BCE on the softmax, the own "
                     "hard negative unprotected, '>' sigma",
    "Circle-Ming/MultiCSR simcse/models.py (cl_masked_forward: weights = where(cos > phi, 0, 1), softmax(cos * weights), "
    "BCE against the one-hot target, only the diagonal of the positive block restored; the frozen encoder reads the "
    "input_ids cut at 32 tokens); the README's example run (batch 128 on one GPU, sigma 0.95); otherwise as 'multicsr'",
    {**_MULTICSR,
     "fn_mask_variant": ("code", "simcse/models.py cl_masked_forward: weights = where(cos > phi, 0, 1) multiply the "
                                 "logits, '>' sigma (Eq. 7 removes them, '>=': multicsr)"),
     "fn_loss": ("bce", "simcse/models.py cl_masked_forward: BCE on softmax(cos * weights) against the one-hot target "
                        "(Eq. 7's InfoNCE: multicsr)"),
     "fn_protect_hard": (False, "simcse/models.py cl_masked_forward: only the positive block's diagonal restored, so the "
                                "own hard negative can be masked (Eq. 6 keeps it: multicsr)"),
     "batch_size": (128, f"{_EXAMPLE}: -b 128 on one GPU (-g 1); the paper's 256 is the multicsr recipe's"),
     "sigma": (0.95, f"{_EXAMPLE}: -p 0.95, also train.py's --phi default; the paper's 0.9 is the multicsr recipe's"),
     "fn_max_length": (32, "simcse/models.py: the frozen encoder reads the same input_ids, cut at --max_seq_length 32")})
