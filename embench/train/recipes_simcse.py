"""SimCSE's recipes (Gao et al. 2021), BERT-base: ``simcse-unsup`` and ``simcse-sup``.

Each value beside its source: the paper's section or table, or the line of the official script
(princeton-nlp/SimCSE ``run_unsup_example.sh``, ``run_sup_example.sh``) that sets it.

The authors' supervised run on 4 GPUs clipped another gradient than one process on the whole batch computes: their
``simcse/models.py`` gathers the embeddings with ``dist.all_gather``, which carries no gradient, and puts back its own
(``z1_list[dist.get_rank()] = z1``), so each GPU computes the loss over all 512 but its gradient flows only through its
128; DDP then averages the four, which is 1/4 of the loss's exact gradient. embench's gather keeps every process's
gradient path (``distributed.gather_with_grad``): the exact gradient, on one process or several. Adam(W) is
insensitive to that scale (up to its eps); Trainer's ``max_grad_norm`` 1.0 clip is not: theirs clipped the quartered
norm, so ``simcse-sup`` clips the exact one at 4.0, which gives their updates (``tests/test_simcse_sup_clip.py``
trains both ways: 1e-7 apart; at 1.0, 8e-3). ``--set grad_clip=1`` is Trainer's value read on embench's gradient.
"""

from __future__ import annotations

from typing import Any

from .recipes import Recipe


def _common(script: str) -> dict[str, tuple[Any, str]]:
    """What both SimCSE recipes share, cited to the paper and to ``script``."""
    return {
        "model": ("bert-base-uncased", f"SimCSE §6.1 'Training details' (BERT, uncased) and Table A.1's BERT-base "
                                       f"column; {script} --model_name_or_path bert-base-uncased"),
        "max_length": (32, f"{script} --max_seq_length 32 (the paper gives none)"),
        "warmup_ratio": (0.0, f"{script} sets no warm-up: Hugging Face Trainer's default 0 (its train.py)"),
        "eval_steps": (125, f"{script} --eval_steps 125, the best checkpoint kept (SimCSE App. A says every 250 steps: "
                            "--eval-steps 250)"),
        "precision": ("auto", f"{script} --fp16 (fp16 autocast with a loss scale: --precision fp16-mixed); auto is bf16 "
                              "autocast on a GPU that has it (fp32's exponent range, no loss scale) and fp32 on a CPU, "
                              "where fp16 is emulated"),
        "eval_tasks": (["STSBenchmark-dev"], f"SimCSE App. A: the STS-B development set picks the checkpoint "
                                             f"({script} --metric_for_best_model stsb_spearman)"),
        "temperature": (0.05, f"SimCSE App. D, Table D.1 (tau 0.05 best); {script} --temp 0.05"),
    }


SIMCSE_UNSUP = Recipe.cited(
    "simcse-unsup", "unsupervised SimCSE, BERT-base: 1 epoch of 10^6 Wikipedia sentences",
    "SimCSE Table A.1 (unsup. BERT-base: batch 64, lr 3e-5), §3 and App. A (1 epoch, keep the best on STS-B dev), "
    "run_unsup_example.sh (max_seq_length 32, temp 0.05, --mlp_only_train, pooler cls, STS-B dev every 125 steps)",
    {**_common("run_unsup_example.sh"),
     "method": ("unsup-simcse", "SimCSE §3: the same sentence twice, dropout noise as the augmentation"),
     "data": (["corpora"], "SimCSE §3 (fn. 2): 10^6 English Wikipedia sentences (wiki1m_for_simcse.txt: "
                           "--train-data FILE); 'corpora' is the data root's stand-in"),
     "batch_size": (64, "SimCSE Table A.1 (unsup., BERT-base); run_unsup_example.sh --per_device_train_batch_size 64 "
                        "on one GPU"),
     "lr": (3e-5, "SimCSE Table A.1 (unsup., BERT-base); run_unsup_example.sh --learning_rate 3e-5"),
     "epochs": (1, "SimCSE App. A (unsupervised: one epoch); run_unsup_example.sh --num_train_epochs 1"),
     "pooling": ("cls_before_pooler", "SimCSE App. A and §6.3, Table 6: [CLS] without the MLP at test "
                                      "(run_unsup_example.sh --pooler_type cls --mlp_only_train)"),
     "mlp": ("train", "SimCSE §6.3, Table 6: the MLP over [CLS] in training only; run_unsup_example.sh --mlp_only_train")})

SIMCSE_SUP = Recipe.cited(
    "simcse-sup", "supervised SimCSE, BERT-base: 3 epochs of NLI triplets, hard negatives (the paper's data is "
                  "nli_for_simcse.csv, --train-data FILE; 'snli' is SentEval's SNLI dev/test, the local stand-in)",
    "SimCSE Table A.1 (sup. base: batch 512, lr 5e-5), App. A (3 epochs), §6.3 and Table 7 (alpha = 1), "
    "run_sup_example.sh (4 GPUs x 128 = 512, max_seq_length 32, temp 0.05, pooler cls with the MLP kept, STS-B dev "
    "every 125 steps)",
    {**_common("run_sup_example.sh"),
     "method": ("sup-simcse", "SimCSE §4: entailment pairs as positives, contradictions as hard negatives (Eq. 5)"),
     "data": (["snli"], "SimCSE §6.1 'Training details': SNLI + MNLI, 314k (nli_for_simcse.csv: --train-data FILE); "
                        "'snli' is SentEval's SNLI dev/test, the data root's stand-in"),
     "batch_size": (512, "SimCSE Table A.1 (sup., BERT-base); run_sup_example.sh: 4 GPUs x "
                         "--per_device_train_batch_size 128"),
     "lr": (5e-5, "SimCSE Table A.1 (sup., BERT-base); run_sup_example.sh --learning_rate 5e-5"),
     "epochs": (3, "SimCSE App. A (supervised: 3 epochs); run_sup_example.sh --num_train_epochs 3"),
     "pooling": ("cls", "SimCSE §6.3, Table 6: [CLS] with the MLP for supervised SimCSE; run_sup_example.sh "
                        "--pooler_type cls"),
     "mlp": ("keep", "SimCSE §6.3: the MLP kept at test for supervised SimCSE (run_sup_example.sh: no --mlp_only_train)"),
     "hard_negative_weight": (1.0, "SimCSE §6.3, Table 7: alpha = 1 (each anchor's own hard negative unweighted)"),
     "grad_clip": (4.0, "run_sup_example.sh sets none: Trainer's max_grad_norm 1.0 over 1/4 of the exact gradient "
                        "(models.py's all_gather carries none, DDP averages 4 GPUs), i.e. 4.0 on the exact gradient "
                        "(embench.train.recipes_simcse's notes; --set grad_clip=1: 1.0 on it)")})
