"""The cropping paper's recipes (González-Márquez, Berens & Kobak): ``crop`` and ``crop-scratch``.

Each value beside its source: the paper's section, or the authors' code (berenslab/text-embed-augm at 09ac529,
``text_embeddings_src/train_stuff.py`` ``train_loop``, formerly ``legacy/model_stuff.py``, and ``data_stuff.py``)
where the paper says nothing.
"""

from __future__ import annotations

from typing import Any

from .recipes import Recipe

_LOOP = "text-embed-augm text_embeddings_src/train_stuff.py train_loop (legacy/model_stuff.py before)"
_CROP: dict[str, tuple[Any, str]] = {
    "method": ("crop", "cropping paper §3.1: two crops of one text as the positive pair, InfoNCE over in-batch "
                       "negatives (Eq. 1)"),
    "model": (None, "no single model: the paper fine-tunes MPNet (§3.2.1; BERT and RoBERTa in Table S1): give --model"),
    "data": (["20newsgroups"], "cropping paper §3.3.1: fine-tuned on the dataset it then represents (ICLR, arXiv, ...: "
                               "--train-data FILE); '20newsgroups' is the data root's stand-in"),
    "optimizer": ("adam", f"cropping paper §3.1 (Adam); {_LOOP}: torch.optim.Adam, no weight decay"),
    "lr": (2e-5, f"cropping paper §3.1 (eta = 2e-5; A.1, Fig. S1d); {_LOOP} lr=2e-5"),
    "batch_size": (64, "cropping paper §3.1 (b = 64, the largest their GPU held; A.1, Fig. S1b)"),
    "warmup_ratio": (0.1, f"cropping paper §3.1 (linear warm-up, then linear decay); {_LOOP}: "
                          "warmup_steps = int(0.1 * len(loader))"),
    "warmup_of": ("epoch", f"{_LOOP}: the warm-up is 10% of ONE epoch's batches (len(loader)), whatever the epochs"),
    "max_length": (512, "text-embed-augm data_stuff.py: the tokenizer's max_length=512 (the paper gives none)"),
    "pooling": ("mean", "cropping paper §3.2.1 (mean pooling over all tokens; A.1, Fig. S1a)"),
    "temperature": (0.05, f"cropping paper §3.1 (tau = 0.05; A.1, Fig. S1a); {_LOOP}: scale 20 = 1 / tau"),
    "crop_sentences": (2, "cropping paper §3.1 and A.1 (t = 2 consecutive sentences; Fig. S1b)"),
    "crop_min_chars": (100, "cropping paper §3.1 and A.1: sentences under 100 characters discarded"),
    "crop_max_chars": (250, "cropping paper §3.1 and A.1: sentences over 250 characters discarded"),
    "eval_steps": (0, "cropping paper A.1: the model after training is scored, none selected (the last model kept)"),
    "grad_clip": (0.0, f"{_LOOP}: loss.backward() then optim.step(), no clipping"),
    "precision": ("fp32", f"{_LOOP}: no autocast, no loss scale (--precision bf16-mixed for speed on a GPU)"),
}

CROP = Recipe.cited(
    "crop", "crop augmentation, fine-tuning a pretrained model for one epoch on one dataset",
    "cropping paper §3.1 and A.1 (Adam, lr 2e-5, batch 64, linear warm-up then decay, t = 2 sentences of "
    "100-250 characters, tau 0.05, mean pooling, 1 epoch, the last model kept); its code (text-embed-augm: warm-up "
    "over 10% of ONE epoch's steps, max_length 512, no gradient clipping)",
    {**_CROP, "epochs": (1, "cropping paper §3.3.1 (one epoch per dataset) and §3.2.3 (more did not help)")},
    {"model": "the recipe fine-tunes a pretrained encoder you choose, e.g. all-MiniLM-L6-v2 (offline) or "
              "all-mpnet-base-v2 (get-mpnet.sh)"})

CROP_SCRATCH = Recipe.cited(
    "crop-scratch", "crop augmentation from random initialisation of the model's config, 10 epochs",
    "cropping paper §3.4 (BERT from scratch: performance had not saturated after one epoch, 10 epochs; Table S6 "
    "col. 10), otherwise as 'crop'",
    {**_CROP,
     "epochs": (10, "cropping paper §3.4: not saturated after one epoch, so 10 epochs (Table S6, col. 10)"),
     "from_scratch": (True, "cropping paper §3.4: the bert-base architecture from random initialisation"),
     "model": ("bert-base-uncased", "cropping paper §3.4: the bert-base architecture (its config; no weights read)")})
