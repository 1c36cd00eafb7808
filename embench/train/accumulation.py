"""Gradient accumulation that leaves a batch-level loss unchanged (GradCache, Gao et al. 2021).

Plain accumulation would give each micro-batch its own in-batch negatives, so "4 x 8" would not be
"32". Instead: (1) every micro-batch is embedded without autograd, its random state recorded;
(2) the method's objective runs on the vectors of all of them and its gradient with respect to
those vectors is kept; (3) each micro-batch is embedded again, with the same random state (so the
same dropout masks), and back-propagates ``<vectors, cached gradient>``. The update equals one
step on the whole batch; memory is that of one micro-batch plus the vectors.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch

from .distributed import DistInfo
from .methods.base import Batch, Method, Outputs


class RandomState:
    """The CPU and (current) CUDA generator states, to replay dropout and masking exactly."""

    def __init__(self, device: torch.device):
        self.cpu = torch.get_rng_state()
        self.cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
        self.device = device

    def restore(self) -> None:
        torch.set_rng_state(self.cpu)
        if self.cuda is not None:
            torch.cuda.set_rng_state(self.cuda, self.device)


def merge(batches: list[Batch]) -> Batch:
    """One batch holding the micro-batches one after another (what the objective sees)."""
    texts = {k: [t for b in batches for t in b.texts[k]] for k in batches[0].texts}
    tensors = {k: torch.cat([b.tensors[k] for b in batches]) for k in batches[0].tensors}
    extras: dict[str, Any] = {}
    for b in batches:
        for k, v in b.extras.items():
            extras[k] = extras.get(k, []) + (list(v) if isinstance(v, (list, tuple)) else [v])
    return Batch(texts, tensors, extras)


def cached_step(method: Method, runner: torch.nn.Module, batches: list[Batch], dist: DistInfo,
                autocast: Callable[[], contextlib.AbstractContextManager], device: torch.device,
                no_sync: Callable[[], contextlib.AbstractContextManager],
                scale: Callable[[torch.Tensor], torch.Tensor] = lambda loss: loss) -> tuple[torch.Tensor, dict[str, float]]:
    """Back-propagate the loss of ``batches`` taken as one batch; returns (loss, logs). ``scale``: fp16's loss
    scale (``mixed_precision.py``), applied once to the objective (the cached gradients carry it on) and to
    each micro-batch's own auxiliary loss."""
    states, firsts = [], []
    with torch.no_grad():
        for b in batches:
            states.append(RandomState(device))
            with autocast():
                firsts.append(method.forward(runner, b))
    names = list(firsts[0].reps)
    cached = {k: torch.cat([o.reps[k] for o in firsts]).detach().requires_grad_(True) for k in names}
    loss, logs = method.objective(Outputs(cached), merge(batches), dist)
    scale(loss).backward()
    grads = {k: cached[k].grad.split([o.reps[k].shape[0] for o in firsts]) for k in names}
    aux_total: torch.Tensor | None = None
    after = RandomState(device)  # the stream continues from where one pass over the batch leaves it
    for i, b in enumerate(batches):
        with no_sync() if i < len(batches) - 1 else contextlib.nullcontext():
            states[i].restore()
            with autocast():
                out = method.forward(runner, b)
            surrogate = sum((out.reps[k] * grads[k][i].to(out.reps[k].dtype)).sum() for k in names)
            if out.aux is not None:
                part = out.aux / len(batches)
                surrogate = surrogate + scale(part)
                aux_total = part.detach() if aux_total is None else aux_total + part.detach()
                logs = {**logs, **out.logs}
            surrogate.backward()
    after.restore()
    total = loss.detach() + (aux_total if aux_total is not None else 0.0)
    return total, logs
