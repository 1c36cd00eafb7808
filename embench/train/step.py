"""One optimiser step of the trainer: this process's share of the global batch, cut into
``grad_accumulation`` micro-batches (accumulated without changing a batch-level loss:
``accumulation.py``); the method's loss; a NaN/inf check before any update; clipping; the update.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import random
from typing import Any

import torch

from ..core.errors import first_line
from ..core.out_of_memory import is_out_of_memory
from . import distributed
from .accumulation import RandomState, cached_step, merge
from .batch_order import batch_indices
from .divergence import diverged
from .fit_memory import after_out_of_memory, record_refit, release_memory
from .length_groups import micro_sizes, text_groups
from .methods.base import Batch, Logs
from .module import SentenceModel, one_call_model

log = logging.getLogger(__name__)


def no_sync(runner: torch.nn.Module) -> contextlib.AbstractContextManager:
    """DDP's gradient synchronisation held back (between micro-batches); nothing without DDP."""
    sync = getattr(runner, "no_sync", None)
    return sync() if callable(sync) else contextlib.nullcontext()


def optimiser_step(t: Any, step: int) -> tuple[float, float, dict[str, float]]:
    """Step ``step`` of trainer ``t``: (the global loss, the gradient norm, the method's logs). A step that runs
    out of memory is taken again split further, from the same random state (``fit_memory.py``)."""
    cfg = t.cfg
    t.method.step = step  # the method may schedule by it (an annealed temperature): methods/base.py
    t.optimizer.zero_grad(set_to_none=True)
    while True:
        state, error = RandomState(torch.device(t.device)), None
        try:
            loss, logs = forward_backward(t, step, step_batches(t, step))
        except Exception as e:  # noqa: BLE001  (only an out of memory is handled; anything else goes on up)
            if not is_out_of_memory(e):
                raise
            error = first_line(e, 200)
        if error is None:
            break
        # here, out of the handler, the failed attempt's frames and the tensors they held are gone; its
        # gradients are let go before the memory is
        t.optimizer.zero_grad(set_to_none=True)
        release_memory(t.device)
        state.restore()
        t.step_fit = after_out_of_memory(t, step, error)
        record_refit(t, step)
    if step + 1 < t.total:
        pretokenize_next(t, step + 1)  # while the device runs this step's backward
    t.scaler.unscale_(t.optimizer)  # the clip and the logged norm see the true gradients
    clip = cfg.grad_clip if cfg.grad_clip > 0 else float("inf")
    norm = torch.nn.utils.clip_grad_norm_(t.params, clip)
    value, gnorm, logs = read_step(loss, norm, logs)
    value = distributed.mean_over_processes(value)  # the global loss
    if not overflowed_fp16(t, value):
        check_finite(t, "loss", value, step)  # before any update
    if not math.isfinite(gnorm) and not t.scaler.is_enabled():
        t.optimizer.zero_grad(set_to_none=True)
        check_finite(t, "gradient norm", gnorm, step)
    t.scaler.step(t.optimizer)  # with fp16 loss scaling, a step whose gradients overflowed is skipped, the scale halved
    t.scaler.update()
    t.scheduler.step()
    return value, gnorm, logs


def read_step(loss: torch.Tensor, norm: torch.Tensor, logs: Logs) -> tuple[float, float, dict[str, float]]:
    """The step's loss, gradient norm and logs as numbers, the tensors on the loss's device read in one wait for the
    device, once the backward is queued: a ``float()`` of the loss or of a logged term before the backward would leave
    a GPU idle while the host queues the backward's kernels. A log on another device (the host) is read on its own."""
    on_device = [k for k, v in logs.items() if isinstance(v, torch.Tensor) and v.device == loss.device]
    values = torch.stack([loss.float(), norm.float().to(loss.device), *(logs[k].detach().float().reshape(()) for k in on_device)]).tolist()
    read = {k: float(v) for k, v in logs.items() if k not in on_device} | dict(zip(on_device, values[2:], strict=True))
    return values[0], values[1], {k: read[k] for k in logs}


def step_batches(t: Any, step: int) -> list[Batch]:
    """This process's examples of step ``step`` in ``t.step_fit.micro_batches`` parts (the same for the same step:
    the order and the method's ``rng`` are seeded by it), grouped by length when there are several. The last
    ones made are kept: ``pretokenize_next`` makes the next step's, which that step then takes as they are."""
    parts = t.step_fit.micro_batches
    made = getattr(t, "step_batches_made", None)
    if made is not None and made[0] == (step, parts):
        return made[1]
    idx = batch_indices(len(t.examples), t.cfg.batch_size, step, t.cfg.seed, t.dist, t.cfg.drop_last)
    if parts > 1 and t.cfg.group_by_length:
        idx = grouped_by_length(t.method.example_lengths(t.examples, idx), idx)
    rng = random.Random(f"{t.cfg.seed}:{step}:{t.dist.rank}")
    bounds = [0, *itertools.accumulate(micro_sizes(len(idx), parts))]
    batches = [t.method.batch(t.examples, idx[a:b], rng) for a, b in itertools.pairwise(bounds)]
    t.step_batches_made = ((step, parts), batches)
    return batches


def grouped_by_length(lengths: list[int] | None, idx: list[int]) -> list[int]:
    """``idx`` ordered by ``lengths`` (stable), so that each micro-batch pads its texts to a length near theirs.
    A pass is padded to its longest text: the bellm recipe's 256 SNLI triplets in 8 micro-batches pad 15.9k real
    tokens to 33.7k in the step's own order and to 24.3k grouped (its first 5 steps). The update is that of the whole
    batch either way (GradCache: the objective sees every example, in whichever order its rows come)."""
    if lengths is None:
        return idx
    return [i for _, i in sorted(zip(lengths, idx, strict=True), key=lambda pair: pair[0])]


def step_text_groups(t: Any, step: int, batches: list[Batch]) -> list[list[int]] | None:
    """The passes of split step ``step`` cut by text (``length_groups.text_groups``, over its texts' token counts),
    or None where its micro-batches are its example ones: one pass, grouping by length off, or a method whose
    forward is not one call of a :class:`SentenceModel` over its texts. Kept with the step's batches."""
    module = one_call_model(t.runner, t.method)
    if len(batches) < 2 or not t.cfg.group_by_length or module is None:
        return None
    made = getattr(t, "step_groups_made", None)
    key = (step, len(batches))
    if made is None or made[0] != key:
        lengths = module.token_lengths(t.method.pass_texts(merge(batches)))
        # several processes: as many passes in each as micro-batches, so that every process makes the same sequence
        # of DDP forwards and backwards (DDP may broadcast buffers in a forward; a token budget's count varies by rank)
        made = (key, text_groups(lengths, len(batches), even=t.dist.enabled))
        t.step_groups_made = made
    return made[1]


def pretokenize_next(t: Any, step: int) -> None:
    """Tokenize step ``step``'s texts now, and queue their copy to the device, in every :class:`SentenceModel`
    of the trained module. Called once this step's backward is queued: on a GPU the host tokenizes while the
    device computes, where a plain loop with no host wait in it overlaps them the same way. At batch 512 x 32
    tokens the host's share (~1,000 texts) was a fifth of an H200 step (benchmarks/recipes_gpu.py). Nothing of
    the step changes: its texts, order and random state are the same; a pass whose texts were not foreseen
    (a method with its own ``pass_texts``, a split changed after an out of memory) tokenizes as before."""
    models = [m for m in t.runner.modules() if isinstance(m, SentenceModel)]
    if not models:
        return
    batches = step_batches(t, step)
    groups = step_text_groups(t, step, batches)
    if groups is not None:
        texts = t.method.pass_texts(merge(batches))
        passes = [[texts[i] for i in g] for g in groups]
    else:
        passes = [t.method.pass_texts(b) for b in batches]
    for m in models:
        m.pretokenize(passes)


def forward_backward(t: Any, step: int, batches: list[Batch]) -> tuple[torch.Tensor, Logs]:
    """The loss of this process's ``batches`` (one step's micro-batches), back-propagated; returns it detached
    (read by the caller with the gradient norm)."""
    if len(batches) == 1:
        with t.autocast():
            loss, logs = t.method.loss(t.runner, batches[0], t.dist)
        t.scaler.scale(loss).backward()  # fp16: scaled so that small gradients do not underflow (no-op otherwise)
    else:
        loss, logs = cached_step(t.method, t.runner, batches, t.dist, t.autocast, torch.device(t.device), t.no_sync,
                                 t.scaler.scale, step_text_groups(t, step, batches))
    return loss.detach(), logs


FP16_PATIENCE = 20  # fp16 overflows in a row after which a non-finite loss is a divergence, not an overflow


def overflowed_fp16(t: Any, loss: float) -> bool:
    """Under fp16 loss scaling, a non-finite loss is an overflow of fp16's range: the step is skipped (its gradients
    are non-finite too, so the scaler skips it) and the scale halved, as Hugging Face's ``--fp16`` the BeLLM authors
    ran does, up to ``FP16_PATIENCE`` in a row; then, or in any other precision, it is a divergence."""
    if not t.scaler.is_enabled() or math.isfinite(loss):
        t.fp16_overflows = 0
        return False
    t.fp16_overflows = getattr(t, "fp16_overflows", 0) + 1
    if t.fp16_overflows < FP16_PATIENCE:
        log.warning("the loss overflowed fp16 (%s, %d in a row): this step is skipped and the loss scale halved; "
                    "%d in a row stop the run (--precision bf16-mixed has fp32's range)", loss, t.fp16_overflows,
                    FP16_PATIENCE)
        return True
    return False


def check_finite(t: Any, what: str, value: float, step: int) -> None:
    if math.isfinite(value):
        return
    # Nothing is saved now: the weights in memory are the ones that produced the NaN, so the resume
    # state written before them is the last good one (only healthy states are written), left as it is.
    diverged(t.out, t.best_score, f"the {what} became {value} at step {step + 1}: training stopped before that update")
