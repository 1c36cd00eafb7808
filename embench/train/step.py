"""One optimiser step of the trainer: this process's share of the global batch, cut into
``grad_accumulation`` micro-batches (accumulated without changing a batch-level loss:
``accumulation.py``); the method's loss; a NaN/inf check before any update; clipping; the update.
"""

from __future__ import annotations

import contextlib
import math
import random
from typing import Any

import torch

from ..models.precision import warn_if_emulated
from . import distributed
from .accumulation import cached_step
from .batch_order import batch_indices
from .divergence import diverged


def resolve_precision(asked: str, device: str) -> str:
    """``auto``: bf16 autocast on a GPU that has bf16, else fp32; any bf16 on hardware that emulates it is warned of."""
    precision = asked
    if precision == "auto":
        precision = "bf16-mixed" if device.startswith("cuda") and torch.cuda.is_bf16_supported() else "fp32"
    if precision != "fp32":
        warn_if_emulated(device.split(":")[0], "bf16")  # bf16 training on a CPU without bf16 arithmetic is slow
    return precision


def precision_context(precision: str, device: str) -> contextlib.AbstractContextManager:
    """bf16 autocast over fp32 weights for ``bf16-mixed``; nothing for fp32 and bf16 weights."""
    if precision != "bf16-mixed":
        return contextlib.nullcontext()
    return torch.autocast(device_type="cuda" if device.startswith("cuda") else "cpu", dtype=torch.bfloat16)


def no_sync(runner: torch.nn.Module) -> contextlib.AbstractContextManager:
    """DDP's gradient synchronisation held back (between micro-batches); nothing without DDP."""
    sync = getattr(runner, "no_sync", None)
    return sync() if callable(sync) else contextlib.nullcontext()


def optimiser_step(t: Any, step: int) -> tuple[float, float, dict[str, float]]:
    """Step ``step`` of trainer ``t``: (the global loss, the gradient norm, the method's logs)."""
    cfg = t.cfg
    t.method.step = step  # the method may schedule by it (an annealed temperature): methods/base.py
    idx = batch_indices(len(t.examples), cfg.batch_size, step, cfg.seed, t.dist)
    rng = random.Random(f"{cfg.seed}:{step}:{t.dist.rank}")
    micro = len(idx) // cfg.grad_accumulation
    batches = [t.method.batch(t.examples, idx[i : i + micro], rng) for i in range(0, len(idx), micro)]
    t.optimizer.zero_grad(set_to_none=True)
    if len(batches) == 1:
        with t.autocast():
            loss, logs = t.method.loss(t.runner, batches[0], t.dist)
        value = distributed.mean_over_processes(float(loss.detach()))  # the global loss, checked before backward
        check_finite(t, "loss", value, step)
        loss.backward()
    else:
        loss, logs = cached_step(t.method, t.runner, batches, t.dist, t.autocast, torch.device(t.device), t.no_sync)
        value = distributed.mean_over_processes(float(loss))
        check_finite(t, "loss", value, step)
    clip = cfg.grad_clip if cfg.grad_clip > 0 else float("inf")
    gnorm = float(torch.nn.utils.clip_grad_norm_(t.params, clip))
    if not math.isfinite(gnorm):
        t.optimizer.zero_grad(set_to_none=True)
        check_finite(t, "gradient norm", gnorm, step)
    t.optimizer.step()
    t.scheduler.step()
    return value, gnorm, logs


def check_finite(t: Any, what: str, value: float, step: int) -> None:
    if math.isfinite(value):
        return
    # Nothing is saved now: the weights in memory are the ones that produced the NaN, so the resume
    # state written before them is the last good one (only healthy states are written), left as it is.
    diverged(t.out, t.best_score, f"the {what} became {value} at step {step + 1}: training stopped before that update")
