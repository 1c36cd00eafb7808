"""How much memory one training step will take, said before the first step, with a warning when it will not fit.

The crop recipe (the paper's GPU setting: 64 pairs, so 128 texts a step, up to 512 tokens) peaked at 18 GB
resident with all-MiniLM-L6-v2 on a CPU in its first 3 steps. That is not a leak: a transformer keeps, for
the backward pass, about 16 hidden-sized and 2 feed-forward-sized values per token and layer, and where
attention is not fused (a CPU, or attention dropout outside a fused kernel) about 3 copies of every
texts x heads x L x L attention matrix per layer, L being the longest text of the batch (311 tokens for a
20 Newsgroups crop: quoted headers and ASCII rules give up to 2 tokens a character). The estimate below
uses those measured constants (MiniLM, 32 and 128 texts of 311 tokens, torch 2.x on a CPU: within 20%);
``--grad-accumulation`` (exact for these losses: GradCache) and ``--gradient-checkpointing`` divide it.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from ..models.families import apply_prompt
from .batch_order import batch_indices
from .footprint import human
from .mixed_precision import AUTOCAST

log = logging.getLogger(__name__)

VALUES_PER_TOKEN_HIDDEN = 16  # fp32 values a BERT layer keeps per token and hidden unit for backward (measured)
VALUES_PER_TOKEN_FFN = 2  # ... per token and feed-forward unit (before and after the activation)
ATTENTION_COPIES = 3.2  # texts x heads x L^2 tensors kept per layer where attention is not fused (measured)
# Values a layer saves for backward per token (per hidden unit, per feed-forward unit), counted by
# torch.autograd.graph.saved_tensors_hooks over distinct storages, tokens varied so that weights drop out (tiny
# BERT and Llama configs, hidden 256-1024, torch 2.13 on a CPU, SDPA; fits within 0.3 %), keyed by (gated
# feed-forward as in Llama / Qwen2 / Mistral, 16-bit autocast, LoRA adapters with dropout on every linear layer).
# The estimate scales the measured BERT constants above by the ratio of a model's saved values to BERT's at the same
# precision: a Llama-shaped layer saves 17 h + 4 f values in 16 bits against BERT's 14 h + 2 f (its SwiGLU keeps 4
# feed-forward-sized values, RMSNorm fp32 copies), and adapters with dropout keep each input's dropped copy and
# mask as well (without dropout they add next to nothing). The bellm recipe's Llama-2-7B step (LoRA 32, dropout
# 0.1, fp16-mixed) so saves 2.2x what the BERT constants say: in an H200 run the estimate's choice of 5
# micro-batches ran out of memory at 78 GiB, where 10 fit.
SAVED_VALUES = {(False, False, False): (10.0, 2.0), (False, True, False): (14.0, 2.0),
                (True, False, False): (10.0, 4.0), (True, True, False): (17.0, 4.0),
                (False, False, True): (18.0, 3.0), (False, True, True): (25.0, 4.0),
                (True, False, True): (18.0, 5.0), (True, True, True): (26.0, 6.0)}
GATED_FFN_MODULES = ("gate_proj", "gate_up_proj")  # a module of these names: a gated feed-forward (Llama's SwiGLU)
WARN_SHARE = 0.5  # warn when a step is estimated to need more than this share of the device's memory
STEPS_SAMPLED = 3  # batches whose longest text sets L (a later, longer batch costs more: quadratic in L)


@dataclass
class StepMemory:
    """The estimate of one step's peak: what is in use before it, what the first step adds, and from what."""

    now: int  # in use before the first step: the process's resident memory (weights, data), or the GPU's allocated
    state: int  # what the first step adds for good: gradients and the optimiser's two moments
    activations: int  # what the forward pass keeps for backward, one micro-batch
    texts: int  # texts per forward pass (one micro-batch, every view)
    length: int  # the longest text of the sampled batches, in tokens
    available: int | None  # the device's memory
    recomputed: int = 0  # of ``activations``, under checkpointing: the one layer recomputed at a time in backward
    bucket_share: float = 1.0  # the share of a pass's padded tokens in one length bucket (SentenceModel.forward)

    @property
    def total(self) -> int:
        return self.with_accumulation(1)

    def with_accumulation(self, factor: float) -> int:
        """The peak with micro-batches ``factor`` times smaller. Under checkpointing one layer of one length bucket
        is recomputed at a time: that part shrinks with a smaller pass only once the pass is below one bucket."""
        kept = (self.activations - self.recomputed) / factor
        return self.now + self.state + int(kept + self.recomputed * min(1 / factor, self.bucket_share))

    @property
    def peak_activations(self) -> int:
        return self.total - self.now - self.state


def architecture_factor(hidden: int, ffn: int, *, gated: bool, lora_dropout: bool, half: bool) -> float:
    """How many times a BERT layer's saved values per token a layer of this kind saves (``SAVED_VALUES``)."""
    a, b = SAVED_VALUES[gated, half, lora_dropout]
    base_a, base_b = SAVED_VALUES[False, half, False]
    return (a * hidden + b * ffn) / (base_a * hidden + base_b * ffn)


def layer_activation_bytes(config: Any, texts: int, length: int, *, attention_matrices: bool, checkpointing: bool,
                           value_bytes: int = 4, gated: bool = False, lora_dropout: bool = False) -> int:
    """Bytes the forward pass of ``texts`` texts of ``length`` tokens keeps for backward in a model of ``config``
    (``gated``: a gated feed-forward; ``lora_dropout``: LoRA adapters with dropout on its linear layers)."""
    layers = int(getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", 0) or 0)
    hidden = int(getattr(config, "hidden_size", None) or getattr(config, "n_embd", 0) or 0)
    per_layer = one_layer_bytes(config, texts, length, attention_matrices=attention_matrices, value_bytes=value_bytes,
                                gated=gated, lora_dropout=lora_dropout)
    if checkpointing:  # each layer's input is kept; one layer at a time is recomputed in full
        return value_bytes * texts * length * hidden * layers + per_layer
    return per_layer * layers


def one_layer_bytes(config: Any, texts: int, length: int, *, attention_matrices: bool, value_bytes: int = 4,
                    gated: bool = False, lora_dropout: bool = False) -> int:
    """Bytes one layer of ``config`` keeps for backward over ``texts`` texts of ``length`` tokens."""
    hidden = int(getattr(config, "hidden_size", None) or getattr(config, "n_embd", 0) or 0)
    ffn = int(getattr(config, "intermediate_size", None) or getattr(config, "n_inner", None) or 4 * hidden)
    heads = int(getattr(config, "num_attention_heads", None) or getattr(config, "n_head", 1) or 1)
    factor = architecture_factor(hidden, ffn, gated=gated, lora_dropout=lora_dropout, half=value_bytes == 2)
    per_layer = int(factor * value_bytes * texts * length * (VALUES_PER_TOKEN_HIDDEN * hidden + VALUES_PER_TOKEN_FFN * ffn))
    if attention_matrices:
        per_layer += int(value_bytes * ATTENTION_COPIES * texts * heads * length * length)
    return per_layer


def available_bytes(device: str) -> int | None:
    """The memory of ``device``: the GPU's (its share under ``torch.cuda.set_per_process_memory_fraction``, a cap
    this process's allocations cannot pass), or this machine's physical memory."""
    try:
        if device.startswith("cuda"):
            dev = torch.device(device).index or 0  # the fraction's functions take an index, not "cuda"
            share = getattr(torch.cuda, "get_per_process_memory_fraction", lambda _d: 1.0)(dev)
            return int(torch.cuda.get_device_properties(dev).total_memory * min(1.0, share))
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError, RuntimeError):
        return None


def in_use_bytes(device: str) -> int:
    """Memory in use now: allocated on the GPU, or this process's resident set (its peak where /proc is absent)."""
    if device.startswith("cuda"):
        return int(torch.cuda.memory_allocated(torch.device(device)))
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        from .footprint import peak_rss_bytes

        return peak_rss_bytes()


def _configs(encoder: Any) -> list[Any]:
    """The transformer configs a training pass runs through (one; two for JTCSE's towers)."""
    if getattr(encoder, "config", None) is not None:
        return [encoder.config]
    return [t.config for n in ("encoder_1", "encoder_2") if getattr(t := getattr(encoder, n, None), "config", None) is not None]


def estimate_step(trainer: Any, checkpointing: bool | None = None) -> StepMemory | None:
    """The memory one step of ``trainer`` (set up: model, examples, optimiser) will take, with activations
    recomputed in backward or not (default: as the run is set); None where the model is not one this
    estimate knows (no transformer config, no tokenizer)."""
    cfg, method, model = trainer.cfg, trainer.method, trainer.model
    inner = method.encoder_for_eval(model)
    configs = _configs(getattr(inner, "encoder", None))
    tokenizer = getattr(inner, "tokenizer", None)
    if not configs or tokenizer is None:
        return None
    texts, length = 0, 0
    for step in range(min(STEPS_SAMPLED, trainer.total)):
        idx = batch_indices(len(trainer.examples), cfg.batch_size, step, cfg.seed, trainer.dist, cfg.drop_last)
        # the very batches the first steps will take (the trainer's own seeding: trainer.step)
        batch = method.batch(trainer.examples, idx, random.Random(f"{cfg.seed}:{step}:{trainer.dist.rank}"))
        flat = [t for view in batch.texts.values() for t in view]
        texts = max(texts, len(flat))
        if flat:
            ids = tokenizer(apply_prompt(getattr(inner, "prompt", "") or "", flat), truncation=True,
                            max_length=int(getattr(inner, "max_length", cfg.max_length)))["input_ids"]
            length = max(length, max(len(x) for x in ids))
    micro = max(1, -(-texts // cfg.grad_accumulation))
    cuda = trainer.device.startswith("cuda")
    dropout = any(float(getattr(c, "attention_probs_dropout_prob", getattr(c, "attention_dropout", 0.0)) or 0.0) > 0
                  for c in configs)
    # fused attention (flash / memory-efficient kernels) keeps no L x L matrix; on a CPU with attention dropout
    # torch falls back to the unfused path that keeps it (measured: sdpa and eager alike), as eager always does
    eager = any(getattr(c, "_attn_implementation", None) == "eager" for c in configs)
    unfused = eager or (dropout and not cuda)
    value_bytes = 2 if trainer.precision == "bf16" or trainer.precision in AUTOCAST else 4  # 16-bit activations
    encoder = getattr(inner, "encoder", None)
    gated = encoder is not None and any(n.rsplit(".", 1)[-1] in GATED_FFN_MODULES for n, _ in encoder.named_modules())
    lora_dropout = bool(cfg.lora_r) and cfg.lora_dropout > 0
    kind = {"attention_matrices": unfused, "value_bytes": value_bytes, "gated": gated, "lora_dropout": lora_dropout}
    recompute = cfg.gradient_checkpointing if checkpointing is None else checkpointing
    acts = sum(layer_activation_bytes(c, micro, length, checkpointing=recompute, **kind) for c in configs)
    recomputed = sum(one_layer_bytes(c, micro, length, **kind) for c in configs) if recompute else 0
    bucket = bucket_budget(trainer)
    trained = sum(p.numel() * p.element_size() for p in trainer.params)
    state = 3 * trained  # a gradient and Adam's two moments per trained weight (the weights are in use already)
    return StepMemory(in_use_bytes(trainer.device), state, acts, micro, length, available_bytes(trainer.device),
                      recomputed, min(1.0, bucket / (micro * length)) if bucket and length else 1.0)


def bucket_budget(trainer: Any) -> int:
    """The padded tokens of a length bucket that one pass of ``trainer``'s step runs in (``SentenceModel.forward``),
    0 where a pass runs whole: a method whose forward is not one call of the module over its texts."""
    from .module import one_call_model

    model = one_call_model(trainer.model, trainer.method)
    return model.bucket_tokens if model is not None else 0


def grad_accumulation_to_fit(est: StepMemory, cfg: Any, world_size: int) -> int | None:
    """The smallest ``--grad-accumulation`` (a divisor of the per-process batch) under which a step fits in
    ``WARN_SHARE`` of the memory; None when no such divisor exists."""
    if est.available is None:
        return None
    per_process = cfg.batch_size // world_size
    for k in range(cfg.grad_accumulation + 1, per_process + 1):
        if per_process % k == 0 and est.with_accumulation(k / cfg.grad_accumulation) <= WARN_SHARE * est.available:
            return k
    return None


def say_step_memory(trainer: Any, announce: Callable[[str], None], warn: bool = True) -> StepMemory | None:
    """Say the estimate before the first step (``announce``), and (``warn``) warn when it exceeds half the
    device's memory: where the run does not fit it on its own (``--no-auto-fit``; ``fit_memory.py``)."""
    try:
        est = estimate_step(trainer)
    except Exception as e:  # noqa: BLE001  (an estimate must never stop a run)
        log.debug("no memory estimate: %s", e)
        return None
    if est is None:
        return None
    cfg, where = trainer.cfg, ("the GPU" if trainer.device.startswith("cuda") else "this machine")
    has = f"; {where} has {human(est.available)}" if est.available else ""
    line = (f"memory: about {human(est.total)} at a step's peak ({human(est.now)} in use now, {human(est.state)} of "
            f"gradients and optimiser state, {human(est.peak_activations)} of activations for {est.texts} texts a pass "
            f"of up to {est.length} tokens){has}")
    announce(line)
    if warn and est.available and est.total > WARN_SHARE * est.available:
        k = grad_accumulation_to_fit(est, cfg, trainer.dist.world_size)
        fix = (f"--grad-accumulation {k} gives the same update (the loss still sees the whole batch) in about "
               f"{human(est.with_accumulation(k / cfg.grad_accumulation))}" if k else
               "a smaller --batch-size or --max-length")
        log.warning("one step of this run needs about %s, more than half of %s's %s (%d texts of up to %d tokens a "
                    "pass, batch %d, --max-length %d); %s, --gradient-checkpointing trades time for memory",
                    human(est.total), where, human(est.available), est.texts, est.length, cfg.batch_size,
                    cfg.max_length, fix)
    return est
