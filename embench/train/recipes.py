"""The papers' training recipes as named presets (``embench train --recipe NAME [--show]``).

Each recipe is a layer of training options between the method's defaults and the user's file and
command line, and cites the table and script it follows. Batch sizes are GLOBAL: over every
process and every accumulation step (``--grad-accumulation`` fits them on smaller GPUs without
changing the in-batch negatives).

A recipe made for one model carries it as the default of ``--model`` (SimCSE's bert-base-uncased, ...),
so a run without ``--model`` trains what the paper trained, or says that model cannot be had here; a
recipe with no single model (crop fine-tunes any pretrained encoder; JTCSE's towers are the authors'
own checkpoints) needs ``--model``. Neither falls back to embench's default model in silence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.plugins import instance_of
from ..core.registry import Registry


@dataclass(frozen=True)
class Recipe:
    name: str
    description: str
    cites: str
    values: dict[str, Any] = field(default_factory=dict)
    requires: dict[str, str] = field(default_factory=dict)  # option -> why the recipe cannot run without it

    @property
    def model(self) -> str | None:
        """The model the paper trains (the default of --model under this recipe), or None when it needs --model."""
        return self.values.get("model")


RECIPES: Registry[Recipe] = Registry("training recipe", plugins="embench.recipes",
                                     expects=instance_of("embench.train.recipes:Recipe", "an embench.train.recipes.Recipe"))


def default_model_note(recipe: str | None, model: str | None) -> str:
    """Where ``model`` came from when it is ``recipe``'s own (empty otherwise): said with a load error, so that
    a run without --model that cannot find the paper's model says which option chooses another."""
    if not recipe or model is None or RECIPES.get(recipe).model != model:
        return ""
    return (f"; {model} is the model --recipe {recipe} trains by default (the paper's), and it is not available here: "
            "give --model NAME (a folder, e.g. all-MiniLM-L6-v2 offline) or make it reachable (the hub, or a copy "
            "in $EMBENCH_MODELS)")

# SimCSE Table A.1's "BERT-base" rows start from bert-base-uncased (run_unsup_example.sh, run_sup_example.sh)
_SIMCSE_COMMON = {"model": "bert-base-uncased", "max_length": 32, "warmup_ratio": 0.0, "eval_steps": 250, "eval_tasks": ["STSBenchmark-dev"],
                  "temperature": 0.05}
RECIPES.add("simcse-unsup", Recipe(
    "simcse-unsup", "unsupervised SimCSE, BERT-base: 1 epoch of 10^6 Wikipedia sentences",
    "SimCSE Table A.1 (unsup. BERT-base: batch 64, lr 3e-5), §3 and App. A (1 epoch, STS-B dev every 250 steps, "
    "keep the best), run_unsup_example.sh (max_seq_length 32, temp 0.05, --mlp_only_train, pooler cls)",
    {"method": "unsup-simcse", "data": ["corpora"], "batch_size": 64, "lr": 3e-5, "epochs": 1,
     "pooling": "cls_before_pooler", "mlp": "train", **_SIMCSE_COMMON}))
RECIPES.add("simcse-sup", Recipe(
    "simcse-sup", "supervised SimCSE, BERT-base: 3 epochs of NLI triplets, hard negatives (the paper's data is "
                  "nli_for_simcse.csv, --train-data FILE; 'snli' is SentEval's SNLI dev/test, the local stand-in)",
    "SimCSE Table A.1 (sup. base: batch 512, lr 5e-5), §4 (3 epochs, alpha = 1), run_sup_example.sh "
    "(4 GPUs x 128 = 512, max_seq_length 32, temp 0.05, pooler cls with the MLP kept)",
    {"method": "sup-simcse", "data": ["snli"], "batch_size": 512, "lr": 5e-5, "epochs": 3, "pooling": "cls",
     "mlp": "keep", "hard_negative_weight": 1.0, **_SIMCSE_COMMON}))
_CROP = {"method": "crop", "model": None, "data": ["20newsgroups"], "optimizer": "adam", "lr": 2e-5, "batch_size": 64,
         "warmup_ratio": 0.1, "warmup_of": "epoch", "max_length": 512, "pooling": "mean", "temperature": 0.05,
         "crop_sentences": 2, "crop_min_chars": 100, "crop_max_chars": 250, "eval_steps": 0,
         "grad_clip": 0.0}  # its training loop clips no gradient
RECIPES.add("crop", Recipe(
    "crop", "crop augmentation, fine-tuning a pretrained model for one epoch on one dataset",
    "cropping paper §2.3 and A.1 (Adam, lr 2e-5, batch 64, linear warm-up then decay, t = 2 sentences of "
    "100-250 characters, tau 0.05, mean pooling, 1 epoch, the last model kept); its code (text-embed-augm: warm-up "
    "over 10% of ONE epoch's steps, max_length 512, no gradient clipping)",
    {**_CROP, "epochs": 1}, {"model": "the recipe fine-tunes a pretrained encoder you choose, e.g. all-MiniLM-L6-v2 "
                                     "(offline) or all-mpnet-base-v2 (get-mpnet.sh)"}))
RECIPES.add("crop-scratch", Recipe(
    "crop-scratch", "crop augmentation from random initialisation of the model's config, 10 epochs",
    "cropping paper §3.4 (BERT from scratch: performance had not saturated after one epoch, 10 epochs; Table S6 "
    "col. 10), otherwise as 'crop'",
    {**_CROP, "epochs": 10, "from_scratch": True, "model": "bert-base-uncased"}))  # BERT's config, §3.4
RECIPES.add("bellm", Recipe(
    "bellm", "BeLLM on a decoder LLM as the authors' README trains it: 4-bit QLoRA, the last layer bidirectional "
             "through the billm package, NLI triplets with hard negatives, one epoch",
    "from the paper: the last layer bidirectional (§3.1, Table 4), loss Eq. 6 with in-batch and hard negatives, LoRA "
    "r 32 / alpha 32 / dropout 0.1 (§4.1), seed 42, "
    "SNLI+MNLI triplets (here 'snli', the data root's stand-in; the paper's AllNLI is --data FILE). From the authors' "
    "README (4AI/BeLLM): max length 60, one epoch, batch 256 (per GPU there, on 4 GPUs with accumulation 4; the paper "
    "only says it searched 16-128), ibn weight 1 with cosine and angle weights 0, temperature 0.05 (1 / AnglE's ibn_tau 20; "
    "the paper gives none), lr 5e-4 (the paper says 2e-4: --set lr=2e-4), --load_kbit 4 (load_kbit 4: NF4 QLoRA as their "
    "model.py loads it, CUDA and bitsandbytes only: --set load_kbit=0 trains unquantised weights), their --fp16 1 "
    "(--precision fp16-mixed: fp16 autocast with a dynamic loss scale, as Hugging Face's Trainer runs it; --precision "
    "bf16-mixed is the choice on a GPU with bf16, needing no scale), and BiLLM_START_INDEX=31 on "
    "the 32-layer LLaMA, i.e. the billm package's stack with the last layer's mask removed, padding mask included "
    "(--bidirectional-mode billm; the paper's Eq. 5 sum is the method's default, --bidirectional-mode sum; the authors' "
    "AnglE code of Dec 2023, SeanLee97/AnglE angle_emb/bellm/modeling_llama.py, is --bidirectional-mode sum-code). From "
    "its train.py: 100 warm-up steps and the prompt 'The representative word for sentence {text} is:\"' (--prompt "
    "bellm-code; the paper's is --prompt bellm). Its eval_sts.py ends each sentence with '.' first: evaluate with "
    "--prompt bellm-eval",
    {"method": "bellm", "model": "meta-llama/Llama-2-7b-hf", "data": ["snli"], "prompt": "bellm-code", "bidirectional_last": 1,
     "bidirectional_mode": "billm", "load_kbit": 4, "lora_r": 32, "lora_alpha": 32.0,
     "lora_dropout": 0.1, "lr": 5e-4, "seed": 42, "max_length": 60, "epochs": 1, "batch_size": 256, "temperature": 0.05,
     "ibn_weight": 1.0, "cosine_weight": 0.0, "angle_weight": 0.0, "pooling": "last_token", "warmup_steps": 100,
     "precision": "fp16-mixed", "eval_steps": 0}))
# As the authors' scripts (tianyuzong/JTCSE train_jtcse_{bert,roberta}.py) run: the loss terms in their code forms
# (unsup_infonce_loss and icnce on the 2B x 2B interleaved views, LTN_loss with its 1e-4 floor and ratio / 2),
# torch.optim.AdamW(model.parameters(), lr) (so PyTorch's weight decay 0.01), no scheduler (a constant rate), no
# gradient clipping. The paper's forms stay the method's defaults (--set nce_form=paper ...).
_JTCSE = {"method": "jtcse", "model": None, "data": ["corpora"], "optimizer": "adamw", "epochs": 1, "max_length": 64,
          "pooling": "cls_before_pooler", "warmup_ratio": 0.0, "eval_steps": 100, "eval_tasks": ["STSBenchmark-dev"],
          "temperature": 0.05, "cross_layers": 6, "nce_form": "code", "icnce_form": "code", "tmc_form": "code",
          "lr_schedule": "constant", "weight_decay": 0.01, "grad_clip": 0.0}
_TOWER2 = {"model": "the first tower: the authors start from their own SimCSE checkpoints (JTCSE_*_pretrained_encoder_1), "
                    "not published; give one with --model",
           "tower2": "the paper's two towers are different pre-trained encoders (the authors start from two SimCSE "
                     "checkpoints, JTCSE_bert_pretrained_encoder_1 and _2); give the second with --tower2 DIR"}
RECIPES.add("jtcse-bert", Recipe(
    "jtcse-bert", "JTCSE on two BERT-base towers (each first trained with unsupervised SimCSE): one epoch",
    "JTCSE §V.A and Eq. 15 (all weights 1, tau 0.05, 6 CAELs: Table IX); the authors' train_jtcse_bert.py (AdamW "
    "with PyTorch's defaults, lr 1.3e-6 constant: no scheduler, no clipping; batch 64, 1 epoch, max_len 64; the code "
    "forms of the three losses; STS-B dev of the summed [CLS] every 100 steps, the best kept). The paper's data is "
    "Wiki1M + the SICK-R sentences (--train-data FILE)",
    {**_JTCSE, "lr": 1.3e-6, "batch_size": 64}, _TOWER2))
RECIPES.add("jtcse-roberta", Recipe(
    "jtcse-roberta", "JTCSE on two RoBERTa-base towers: one epoch, batch 256",
    "the authors' train_jtcse_roberta.py (AdamW, lr 1e-6 constant, batch 256, 1 epoch, max_len 64, 6 CAELs, STS-B "
    "dev every 100 steps); otherwise as jtcse-bert",
    {**_JTCSE, "lr": 1e-6, "batch_size": 256}, _TOWER2))
_MULTICSR = {"method": "sup-simcse", "model": "bert-base-uncased", "batch_size": 256, "temperature": 0.05, "sigma": 0.9,
             "false_negative_filter": "all-MiniLM-L6-v2", "fn_guide_pooling": "cls_before_pooler", "pooling": "cls_before_pooler",
             "mlp": "train", "hard_negative_weight": 1.0, "lr": 5e-5, "epochs": 3, "max_length": 32, "warmup_ratio": 0.0,
             "eval_steps": 25, "eval_tasks": ["STSBenchmark-dev"]}
RECIPES.add("multicsr", Recipe(
    "multicsr", "MultiCSR stage 3: supervised SimCSE on generated, curated triplets (--train-data FILE) with the "
                "frozen encoder's in-batch false negatives masked",
    "from the paper (§4.1 'Implementation details', Eq. 5-7): batch 256, tau 0.05, sigma 0.9, the best checkpoint on "
    "STS-B dev, hard negatives from the generated contradictions. From the authors' run.sh (Circle-Ming/MultiCSR): "
    "[CLS] with the MLP in training only (--pooler_type cls --mlp_only_train); from its README's example command "
    "(run.sh -e 3 -r 5e-5 -l 32 -t 25): lr 5e-5, 3 epochs, 32 tokens, STS-B dev every 25 steps (the example's -b 128 "
    "and -p 0.95 differ from the paper's batch 256 and sigma 0.9, which are kept: --batch-size 128 --sigma 0.95); from "
    "its simcse/models.py (cl_forward with is_mask=True): the frozen encoder's raw [CLS] state, no MLP "
    "(fn_guide_pooling cls_before_pooler; --set fn_guide_pooling=null pools it as it loads). The paper's frozen "
    "encoder is SimCSE of the matching backbone (the README: princeton-nlp/unsup-simcse-bert-base-uncased; not here "
    "offline): all-MiniLM-L6-v2 stands in, read at its raw [CLS] as the code reads SimCSE's; --false-negative-filter "
    "changes it",
    _MULTICSR))
RECIPES.add("multicsr-code", Recipe(
    "multicsr-code", "MultiCSR stage 3 as the authors' code computes it: masked logits x 0, BCE on the softmax, the own "
                     "hard negative unprotected, '>' sigma",
    "Circle-Ming/MultiCSR simcse/models.py (cl_masked_forward: weights = where(cos > phi, 0, 1), softmax(cos * weights), "
    "BCE against the one-hot target, only the diagonal of the positive block restored); otherwise as 'multicsr'",
    {**_MULTICSR, "fn_mask_variant": "code", "fn_loss": "bce", "fn_protect_hard": False}))
