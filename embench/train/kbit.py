"""Base weights quantised to 4 or 8 bits under LoRA adapters (QLoRA, Dettmers et al. 2023): ``load_kbit``.

The BeLLM authors train this way: their README runs ``train.py --load_kbit 4``, and the loader
it goes through (4AI/BeLLM ``model.py``, ``AnglE.__init__``) reads the model with bitsandbytes (NF4, double
quantisation, float32 compute, ``llm_int8_threshold`` 6), then calls peft's ``prepare_model_for_kbit_training``
before adding the adapters. Both are read here the same way. bitsandbytes (0.46.1 or later, which
transformers asks for) quantises on a CUDA GPU and on the CPU; it is not one of embench's dependencies:
asking for it on another device, or without the package, is a clear error before any weight is read.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..core.errors import EmbenchError

KBITS = (4, 8)
OFF = "--set load_kbit=0"  # how a run (or --recipe bellm, which sets 4) trains without it


def check_kbit(bits: Any, lora_r: int, from_scratch: bool = False, precision: str = "auto") -> None:
    """The value, and LoRA with it (quantised weights are not trained), checked before anything loads."""
    if bits in (0, None):
        return
    if bits not in KBITS:
        raise EmbenchError(f"--set load_kbit={bits!r}: choose 4 (QLoRA, the BeLLM authors' --load_kbit 4) or 8, "
                           f"or 0 ({OFF}) for unquantised weights")
    if from_scratch or precision == "bf16":
        raise EmbenchError(f"--set load_kbit={bits} quantises pretrained weights as they are read: not with "
                           f"{'--from-scratch' if from_scratch else '--precision bf16 (weights cast to bf16)'}")
    if not lora_r:
        raise EmbenchError(f"--set load_kbit={bits} quantises the base weights, which then cannot be trained: give "
                           f"--lora-r (LoRA adapters are what trains), or {OFF}")


def kbit_load_kwargs(bits: int | None, device: str) -> dict[str, Any]:
    """``from_pretrained`` keywords that quantise the weights as they are read, on ``device`` (a CUDA GPU or the CPU)."""
    if not bits:
        return {}
    device = str(device)
    if not (device.startswith("cuda") or device == "cpu"):
        raise EmbenchError(f"--set load_kbit={bits} (QLoRA) quantises the base weights with bitsandbytes, which runs on "
                           f"a CUDA GPU or the CPU; this run is on {device}. Train unquantised weights with {OFF}")
    try:
        import bitsandbytes  # noqa: F401
    except ImportError:
        raise EmbenchError(f"--set load_kbit={bits} (QLoRA) needs the bitsandbytes package, which is not installed "
                           f"(pip install 'embench[qlora]'), or train unquantised weights with {OFF}") from None
    from transformers import BitsAndBytesConfig

    quantisation = BitsAndBytesConfig(load_in_4bit=bits == 4, load_in_8bit=bits == 8, llm_int8_threshold=6.0,
                                      llm_int8_has_fp16_weight=False, bnb_4bit_compute_dtype=torch.float32,
                                      bnb_4bit_use_double_quant=True, bnb_4bit_quant_type="nf4")
    place = "cpu" if device == "cpu" else int(device.split(":", 1)[1]) if ":" in device else torch.cuda.current_device()
    return {"quantization_config": quantisation, "device_map": {"": place}}


def prepare_kbit(encoder: nn.Module, gradient_checkpointing: bool) -> nn.Module:
    """peft's preparation of a quantised model for adapters (norms and embeddings in float32, input gradients
    on); gradient checkpointing stays as the run asks (peft would turn it on), non-reentrant as everywhere in the
    trainer (``backbone.checkpoint_activations``): peft's own call would switch it to torch's reentrant form, which
    warns on every step and does not mix with DDP."""
    from peft import prepare_model_for_kbit_training

    return prepare_model_for_kbit_training(encoder, use_gradient_checkpointing=gradient_checkpointing,
                                           gradient_checkpointing_kwargs={"use_reentrant": False})
