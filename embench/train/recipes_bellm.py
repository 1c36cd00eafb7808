"""BeLLM's recipe (Li & Li, NAACL 2024) as the authors' README trains it: ``bellm``.

Each value beside its source: the paper's section, the README's training command (4AI/BeLLM at ade3ce0,
2024-04-26, the version of the paper and of the released SeanLee97/bellm-llama-7b-nli; the first stage:
SeanLee97/all_nli_angle_format_b), its ``model.py`` (``AnglE.fit``), or the defaults of its ``train.py`` that
the command leaves as they are. Where the README and the paper differ the README's value is kept and the
paper's named with the option that gives it. The README of 9da9269 (2024-06-13) trains another configuration
(Llama-2-7b-chat-hf, mean pooling, ibn 20 with the angle term, lr 2e-4, LoRA 64/128, 3 epochs): not this recipe.
"""

from __future__ import annotations

from .recipes import Recipe

_README = "authors' README (4AI/BeLLM at ade3ce0, 2024-04-26)"

BELLM = Recipe.cited(
    "bellm", "BeLLM on a decoder LLM as the authors' README trains it: 4-bit QLoRA, the last layer bidirectional "
             "through the billm package, NLI triplets with hard negatives, one epoch",
    "from the paper: the last layer bidirectional (§3.1, Table 4), loss Eq. 6 with in-batch and hard negatives, LoRA "
    "r 32 / alpha 32 / dropout 0.1 (§4, Model Settings), seed 42, "
    "SNLI+MNLI triplets (here 'snli', the data root's stand-in; the paper's AllNLI is --train-data FILE). From the authors' "
    "README (4AI/BeLLM at ade3ce0): max length 60, one epoch, steps of 1,024 triplets made of four losses of 256 (256 "
    "per GPU on 4 GPUs, accumulation 4 divided by the GPUs in model.py; the paper only says it searched 16-128), ibn weight 1 with cosine and angle weights 0, temperature 0.05 (1 / AnglE's ibn_tau 20; "
    "the paper gives none), lr 5e-4 (the paper says 2e-4: --set lr=2e-4), --load_kbit 4 (load_kbit 4: NF4 QLoRA as their "
    "model.py loads it, needs bitsandbytes: --set load_kbit=0 trains unquantised weights), fp32 (their --fp16 1 "
    "turns fp16 off: AnglE.fit keeps fp16 only when it is None; the weights and the 4-bit compute are float32; "
    "--precision fp16-mixed is what the flag reads as, bf16-mixed the choice for speed on a GPU), and BiLLM_START_INDEX=31 on "
    "the 32-layer LLaMA, i.e. the billm package's stack with the last layer's mask removed, padding mask included "
    "(--bidirectional-mode billm; the paper's Eq. 5 sum is the method's default, --bidirectional-mode sum; the authors' "
    "AnglE code of Dec 2023, SeanLee97/AnglE angle_emb/bellm/modeling_llama.py, is --bidirectional-mode sum-code). From "
    "its train.py: 100 warm-up steps and the prompt 'The representative word for sentence {text} is:\"' (--prompt "
    "bellm-code; the paper's is --prompt bellm). Its eval_sts.py ends each sentence with '.' first: evaluate with "
    "--prompt bellm-eval",
    {"method": ("bellm", "BeLLM §3: the last layer(s) bidirectional, the representative word's embedding, Eq. 6"),
     "model": ("meta-llama/Llama-2-7b-hf", f"BeLLM §4, Model Settings (LLaMA2-7B); {_README} trains "
                                           "NousResearch/Llama-2-7b-hf, a copy of the same weights"),
     "data": (["snli"], "BeLLM §4, Datasets: MNLI + SNLI triplets (the README: SeanLee97/all_nli_angle_format_b; "
                        "AllNLI is --train-data FILE); 'snli' is the data root's stand-in"),
     "prompt": ("bellm-code", "the authors' train.py --prompt_template default ('for sentence {text}'); the paper's §3.3 "
                              "wording is --prompt bellm"),
     "bidirectional_last": (1, f"BeLLM §3.2 and Table 4 (the turning point: the last layer); {_README}: "
                               "BiLLM_START_INDEX=31 of LLaMA's 32 layers"),
     "bidirectional_mode": ("billm", f"{_README}: BiLLM_START_INDEX=31 through the billm package, every mask of the last "
                                     "layer removed, padding's too; the paper's Eq. 5 sum is --bidirectional-mode sum"),
     "load_kbit": (4, f"{_README} --load_kbit 4: NF4 QLoRA as its model.py loads it (needs bitsandbytes; "
                      "--set load_kbit=0 trains unquantised weights)"),
     "lora_r": (32, f"BeLLM §4, Model Settings (lora_r = 32); {_README} --lora_r 32"),
     "lora_alpha": (32.0, f"BeLLM §4, Model Settings (lora_alpha = 32); {_README} --lora_alpha 32"),
     "lora_dropout": (0.1, f"BeLLM §4, Model Settings (lora_dropout = 0.1); {_README} --lora_dropout 0.1"),
     "lr": (5e-4, f"{_README} --learning_rate 5e-4; the paper §4 says 2e-4: --set lr=2e-4"),
     "seed": (42, f"BeLLM §4, Model Settings (seed 42, after SimCSE); {_README} --seed 42"),
     "max_length": (60, f"{_README} --maxlen 60 (the paper gives none)"),
     "epochs": (1, f"{_README} --epochs 1 (the paper gives none)"),
     "batch_size": (1024, f"{_README} --batch_size 256 on 4 GPUs (torchrun --nproc_per_node=4) with "
                          "--gradient_accumulation_steps 4, which model.py's AnglE.fit divides by the 4 GPUs: 1,024 "
                          "triplets an optimizer step; the paper only says it searched 16-128"),
     "loss_group": (256, f"{_README} --batch_size 256 per GPU: AnglE's loss on each GPU over that GPU's 256 (no "
                         "negatives gathered across GPUs), the four averaged; --set loss_group=0: one loss over the step"),
     "temperature": (0.05, "the authors' train.py --ibn_tau default 20 (tau = 1/20; the README leaves it); the paper "
                           "gives no tau"),
     "ibn_weight": (1.0, f"{_README} --ibn_w 1.0: Eq. 6, in-batch and hard negatives"),
     "cosine_weight": (0.0, f"{_README} --cosine_w 0.0: AnglE's CoSENT term off"),
     "angle_weight": (0.0, f"{_README} --angle_w 0.0: AnglE's angle term off"),
     "pooling": ("last_token", "BeLLM §3.3: the representative word's embedding, read at the prompt's last token"),
     "warmup_steps": (100, "the authors' train.py --warmup_steps default 100 (the README leaves it)"),
     "precision": ("fp32", "4AI/BeLLM model.py AnglE.fit: 'if fp16 is None and self.is_llm: fp16 = True else: fp16 = "
                           "False', and train.py passes --fp16 1 (True, not None): the Trainer ran without fp16, over "
                           "weights loaded in float32 with bnb_4bit_compute_dtype float32 (--precision fp16-mixed: fp16 "
                           "autocast with a loss scale, what the flag reads as; bf16-mixed for speed on a GPU)"),
     "eval_steps": (0, f"{_README} gives train.py no --valid_name_or_path: no evaluation, the last model kept")})
