"""The network a method starts from: a pretrained checkpoint (or its config, randomly initialised),
its tokenizer and model family, made ready for training (dropout, frozen parts, gradient
checkpointing, bf16 weights, LoRA adapters).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..core.errors import EmbenchError, ModelLoadError
from ..models.families import FAMILIES, Family, detect
from ..models.gguf_cache import dequantised_gguf, gguf_file_of
from ..models.layer_stack import transformer_layers
from ..models.max_length import check_max_length
from ..models.model_names import from_hub, resolve_model_path
from ..models.st_folder import sentence_transformers_config
from .config import TrainConfig, option_flag
from .kbit import kbit_load_kwargs, prepare_kbit
from .recipes import default_model_note

DROPOUT_ATTRS = ("hidden_dropout_prob", "attention_probs_dropout_prob", "dropout", "attention_dropout")


@dataclass
class Backbone:
    encoder: nn.Module
    tokenizer: Any
    family: Family
    mlm_head: nn.Module | None = None


def load_backbone(cfg: TrainConfig, device: str, *, mlm: bool = False) -> Backbone:
    """The encoder of ``cfg.model`` (``AutoModelForMaskedLM``'s base when ``mlm``), on ``device``."""
    from transformers import AutoConfig, AutoModel, AutoModelForMaskedLM, AutoTokenizer

    folder, tried, hub_id = resolve_model_path(cfg.model, cfg.revision)
    if folder is None and cfg.revision is not None:  # the hub's copy at that revision, never another one
        folder = from_hub(hub_id, tried, cfg.revision)
        if folder is None:
            raise ModelLoadError(cfg.model, tried, f"(--revision {cfg.revision})")
    source = str(folder) if folder is not None else hub_id
    st = sentence_transformers_config(folder) if folder is not None else None
    hf = str(st["transformer_path"]) if st else source
    gguf = gguf_file_of(cfg.model)
    # a GGUF file is dequantised once into embench's cache, then read from there like a checkpoint folder
    cached = dequantised_gguf(Path(cfg.model)) if gguf else None
    if cached is not None:
        hf = source = str(cached)
    extra = {"gguf_file": gguf} if gguf and cached is None else {}
    try:
        tok_from = hf if st is None or _has_tokenizer(Path(hf)) else source
        tokenizer = AutoTokenizer.from_pretrained(tok_from, **extra)
        config = AutoConfig.from_pretrained(hf, **extra, **cfg.model_config)
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise ModelLoadError(cfg.model, [*tried, f"transformers from {hf}: {type(e).__name__}: {first}"],
                             default_model_note(cfg.recipe, cfg.model)) from None
    family = FAMILIES.get(cfg.family) if cfg.family else detect(config, folder, gguf, st_folder=bool(st))
    # within the model's positions, before any weight is read: beyond them a long text failed mid-step with a traceback
    for option in ("max_length", "eval_max_length", "export_max_length"):
        check_max_length(getattr(cfg, option), config, option_flag(option))
    if cfg.dropout is not None:
        for attr in DROPOUT_ATTRS:
            if hasattr(config, attr):
                setattr(config, attr, cfg.dropout)
    # fp32 master weights whatever the checkpoint was saved in (transformers 5 loads the saved dtype by default)
    kwargs = {**extra, **family.load_kwargs(), "torch_dtype": torch.float32, **kbit_load_kwargs(cfg.load_kbit, device)}
    mlm_head = None
    if mlm:
        full = (_random_init(AutoModelForMaskedLM, config, family, cfg, device) if cfg.from_scratch
                else AutoModelForMaskedLM.from_pretrained(hf, config=config, **kwargs))
        encoder, mlm_head = full.base_model, _mlm_head(full)
    elif cfg.from_scratch:
        encoder = _random_init(AutoModel, config, family, cfg, device)
    else:
        encoder = AutoModel.from_pretrained(hf, config=config, **kwargs)
    encoder = family.apply_patch(encoder, cfg.model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    tokenizer.padding_side = family.padding_side
    freeze(encoder, cfg.freeze_embeddings, cfg.freeze_layers)
    if cfg.gradient_checkpointing:
        checkpoint_activations(encoder)
    if cfg.load_kbit:  # QLoRA: peft's preparation before the adapters, as the BeLLM authors' loader does
        encoder = prepare_kbit(encoder, cfg.gradient_checkpointing)
    if cfg.lora_r:
        from .adapters import add_lora

        encoder = add_lora(encoder, cfg)
    placed = encoder if cfg.load_kbit else encoder.to(device)  # quantised weights were placed as they were read
    return Backbone(placed, tokenizer, family, mlm_head.to(device) if mlm_head is not None else None)


def checkpoint_activations(encoder: nn.Module) -> None:
    """Activations recomputed in backward (gradient checkpointing), here or once a run finds it needs it
    (``fit_memory.py``); non-reentrant checkpointing works with frozen inputs and with DDP."""
    kwargs = {"use_reentrant": False}
    if hasattr(encoder, "activation_checkpointing_enable"):  # transformers >= 5.x renamed it
        encoder.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        encoder.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def _random_init(auto: Any, config: Any, family: Family, cfg: TrainConfig, device: str) -> nn.Module:
    """``config`` randomly initialised where it will train and in the dtype it will train in (bf16 under
    ``--precision bf16``, else fp32 master weights), not on the host and then copied: a LLaMA-2-7B config in
    fp32 is 27 GB of host memory and a long initialisation on the CPU's cores before the copy."""
    dtype = torch.bfloat16 if cfg.precision == "bf16" else torch.float32
    with torch.device(device):
        return auto.from_config(config, torch_dtype=dtype, **family.load_kwargs())


def _has_tokenizer(p: Path) -> bool:
    return any((p / f).exists() for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt"))


def _mlm_head(full: nn.Module) -> nn.Module:
    """The masked-LM head of a ``*ForMaskedLM`` model (applied to hidden states)."""
    for name in ("cls", "lm_head", "predictions", "vocab_projector"):
        head = getattr(full, name, None)
        if isinstance(head, nn.Module):
            return head
    raise EmbenchError(f"--mlm-weight: cannot find the MLM head of {type(full).__name__}")


def freeze(encoder: nn.Module, embeddings: bool, first_layers: int) -> None:
    """Freeze the embedding layer and/or the first ``first_layers`` transformer layers (cropping
    paper §4, Fig. 4a: the embeddings are frozen and the last layers trained)."""
    if embeddings:
        emb = getattr(encoder, "embeddings", None) or getattr(encoder, "embed_tokens", None)
        if emb is None:
            raise EmbenchError(f"--freeze-embeddings: {type(encoder).__name__} has no embeddings module")
        for p in emb.parameters():
            p.requires_grad_(False)
    if first_layers:
        layers = transformer_layers(encoder)
        if first_layers > len(layers):
            raise EmbenchError(f"--freeze-layers {first_layers}: the model has only {len(layers)} layers")
        for layer in layers[:first_layers]:
            for p in layer.parameters():
                p.requires_grad_(False)
