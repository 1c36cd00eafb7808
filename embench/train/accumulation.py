"""Gradient accumulation that leaves a batch-level loss unchanged (GradCache, Gao et al. 2021).

Plain accumulation would give each micro-batch its own in-batch negatives, so "4 x 8" would not be
"32". Instead: (1) every micro-batch is embedded without autograd, its random state recorded;
(2) the method's objective runs on the vectors of all of them and its gradient with respect to
those vectors is kept; (3) each micro-batch is embedded again, with the same random state (so the
same dropout masks), and back-propagates ``<vectors, cached gradient>``. The update equals one
step on the whole batch; memory is that of one micro-batch plus the vectors.

Where a method's forward is one module call over its texts, cut into views (``Method.splits_by_text``), a
micro-batch is a set of the step's texts, not of its examples: all of them sorted by length and cut by a
token budget (``length_groups.text_groups``), so that each pass pads its texts to a length near their own. The objective
sees the same rows either way. On the bellm recipe's SNLI triplets (a premise and two shorter hypotheses
each) a micro-batch of whole examples is padded to its longest premise.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch

from .distributed import DistInfo
from .methods.base import Batch, Logs, Method, Outputs
from .module import group_positions


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
                scale: Callable[[torch.Tensor], torch.Tensor] = lambda loss: loss,
                groups: list[list[int]] | None = None) -> tuple[torch.Tensor, Logs]:
    """Back-propagate the loss of ``batches`` taken as one batch; returns (loss, logs). ``scale``: fp16's loss
    scale (``mixed_precision.py``), applied once to the objective (the cached gradients carry it on) and to
    each micro-batch's own auxiliary loss. ``groups`` (for a method that ``splits_by_text``): the passes, as
    ``length_groups.text_groups`` of the merged batch's ``pass_texts``, instead of the example micro-batches."""
    if groups is not None:
        return cached_step_by_text(method, runner, batches, groups, dist, autocast, device, no_sync, scale)
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


def cached_step_by_text(method: Method, runner: torch.nn.Module, batches: list[Batch], groups: list[list[int]],
                        dist: DistInfo,
                        autocast: Callable[[], contextlib.AbstractContextManager], device: torch.device,
                        no_sync: Callable[[], contextlib.AbstractContextManager],
                        scale: Callable[[torch.Tensor], torch.Tensor]) -> tuple[torch.Tensor, Logs]:
    """``cached_step`` with the step's texts cut into ``groups``: each group embedded without autograd, the
    objective over all of them (rows put back in the pass's order, then cut into views as ``Method.forward``
    does), each group embedded again under its recorded random state and back-propagating its rows' gradient."""
    whole = merge(batches)
    texts = method.pass_texts(whole)
    states, firsts = [], []
    with torch.no_grad():
        for g in groups:
            states.append(RandomState(device))
            with autocast():
                firsts.append(runner([texts[i] for i in g]).float())
    positions = group_positions(groups, firsts[0].device)
    rows = torch.empty(len(texts), firsts[0].shape[1], device=firsts[0].device)
    rows[positions] = torch.cat(firsts)
    rows.requires_grad_(True)
    names = list(whole.texts)
    loss, logs = method.objective(Outputs(dict(zip(names, rows.chunk(len(names)), strict=True))), whole, dist)
    scale(loss).backward()
    grads = rows.grad[positions].split([len(g) for g in groups])  # each group's rows, in the group's order
    after = RandomState(device)
    for i, g in enumerate(groups):
        with no_sync() if i < len(groups) - 1 else contextlib.nullcontext():
            states[i].restore()
            with autocast():
                z = runner([texts[j] for j in g]).float()
            (z * grads[i]).sum().backward()
    after.restore()
    return loss.detach(), logs
