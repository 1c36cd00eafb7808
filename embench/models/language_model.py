"""Loading a checkpoint for generation (MultiCSR's stages 1-2): a causal LM or an encoder-decoder with its
language-model head, found and cached as :func:`embench.models.loader.load_model` finds encoders."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..core.errors import EmbenchError
from .device_choice import pick_device
from .families import DECODER_TYPES, FAMILIES, Family
from .loader import _checkpoint_source


@dataclass
class LanguageModel:
    """A checkpoint loaded for generation: the model with its LM head, its tokenizer, and what it is."""

    model: torch.nn.Module
    tokenizer: Any
    kind: str  # causal | seq2seq
    name: str
    source: str
    fingerprint: str
    family: Family


def load_language_model(name: str, *, device: str | None = None, family: str | None = None,
                        trust_remote_code: bool = False) -> LanguageModel:
    """A causal LM (folder, alias, hub id or ``.gguf`` file, found and cached as :func:`load_model` finds
    them) or an encoder-decoder (T5, Flan-T5) with its language-model head, fp32, eval mode, on ``device``.
    An encoder-only checkpoint is an error: it cannot generate."""
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    forced: Family | None = FAMILIES.get(family) if family else None
    device = pick_device(device)
    kinds: list[str] = []

    def head(cfg: Any) -> Any:
        if getattr(cfg, "is_encoder_decoder", False):
            kinds.append("seq2seq")
            return AutoModelForSeq2SeqLM
        if getattr(cfg, "model_type", "") in DECODER_TYPES or getattr(cfg, "is_decoder", False):
            kinds.append("causal")
            return AutoModelForCausalLM
        raise EmbenchError(
            f"{name} is an encoder-only model ({getattr(cfg, 'model_type', '?')}): it cannot generate text. "
            "Give a causal LM (a decoder such as Llama, Qwen, SmolLM; a folder, hub id or .gguf file) or an "
            "encoder-decoder such as Flan-T5")

    src = _checkpoint_source(str(name), None, None, forced, trust_remote_code, head=head)
    kind = kinds[0]
    model, tok = src.load()
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token or tok.unk_token
    tok.padding_side = "left" if kind == "causal" else "right"  # new tokens follow the prompt's last real token
    return LanguageModel(model.eval().to(device), tok, kind, src.display, src.source, src.fingerprint, src.family)


def language_model_fingerprint(name: str, *, trust_remote_code: bool = False) -> str | None:
    """The fingerprint :func:`load_language_model` gives ``name`` (its weight, config and tokenizer files, memoised),
    without reading the weights into a model; None where no model can be found or read under that name. What a
    run's answers are kept with, so that a later run follows the weights, not the path as typed (a symlink re-pointed,
    ``./m`` and ``/abs/m``)."""
    try:
        return _checkpoint_source(str(name), None, None, None, trust_remote_code).fingerprint
    except EmbenchError:  # ModelLoadError too: nothing there to follow
        return None
