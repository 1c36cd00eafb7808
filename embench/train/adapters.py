"""Parameter-efficient training through peft: LoRA adapters on the encoder, merged on export.

BeLLM trains LLaMA2-7B with LoRA r = 32, alpha = 32, dropout 0.1 (BeLLM §4.1); the target modules
default to every linear projection peft knows for the architecture (``all-linear``), which is
what "about 80M trainable parameters" implies for r = 32 (BeLLM notes).
"""

from __future__ import annotations

import copy
from typing import Any

from torch import nn

from ..core.errors import EmbenchError


def add_lora(encoder: nn.Module, cfg: Any) -> nn.Module:
    """``encoder`` wrapped by peft with LoRA adapters; only the adapters are trainable."""
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError:
        raise EmbenchError("--lora-r needs the peft package (pip install 'embench[llm]')") from None
    targets = cfg.lora_targets or "all-linear"
    lora = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                      target_modules=targets if isinstance(targets, str) else list(targets), bias="none")
    try:
        return get_peft_model(encoder, lora)
    except ValueError as e:
        raise EmbenchError(f"--lora-targets {targets!r}: {e}") from None


def is_peft(encoder: nn.Module) -> bool:
    return type(encoder).__module__.startswith("peft.")


def exportable(encoder: nn.Module) -> nn.Module:
    """A plain transformers model to save: LoRA weights merged into a copy (training goes on unmerged)."""
    if not is_peft(encoder):
        return encoder
    return copy.deepcopy(encoder).merge_and_unload()
