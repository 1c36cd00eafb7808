"""A training step made to fit the device's memory without changing the update (issue 31, item 5).

BeLLM's recipe (256 triplets x 60 tokens a step) runs out of memory on an 80 GB GPU on a 0.5B decoder, and
the paper trains a 7B one. The global batch cannot shrink: in-batch negatives make it part of the loss. So
the step is split into micro-batches through GradCache (``accumulation.py``: the objective still sees the
whole batch, and the update is that of one batch), or its activations are recomputed in backward (gradient
checkpointing). Each costs a third more compute: 8 N a token against 6 N, GradCache's first pass without
gradients or checkpointing's second forward; both together cost 10 N, so they are combined last.

Which of the two comes first follows H200 runs of the bellm recipe (LLaMA-2-7B shape, 256 SNLI triplets a step,
reports/training/gpu/recipes.md): one checkpointed pass (run C) computed 7.6k padded tokens a second, a split into
5 passes by text (run H) 4.8k, at the same 8 N a token. One pass was still the slowest per step (5.99 s against
3.87 s) only because it padded all 768 texts to the longest, 45.7k tokens for 15.8k real ones. A pass over more
than ``bucket_tokens`` padded tokens now runs in length buckets (``SentenceModel.forward``), cut where the padding
costs least, which pads it less than a split by text (to 1.08-1.10x its real tokens, against 1.18x in run H's
split and 1.31-1.36x in the buckets first tried: ``length_groups.length_buckets``); so where the step's pass is
cut into buckets and fits with checkpointing, that is chosen before any split. (Whether C's rate holds in these
buckets is for the next GPU run to show: benchmarks/GPU_SESSION.md.) Otherwise the fewest micro-batches that fit,
then micro-batches with checkpointing.

Two moments choose: before the first step, from the estimate of ``memory_estimate.py`` (the smallest
number of micro-batches that fits ``FIT_SHARE`` of the device, larger micro-batches running faster); and
when a step runs out of memory all the same (an estimate is within 20 %, not exact), the step is taken
again with twice the micro-batches, from the same random state, so it is the step it would have been.
Each choice is said once, and kept in ``train_config.json`` and the metrics. When nothing smaller is left,
or under several processes (a retry on one rank would leave the others waiting in a collective), the out
of memory is one message naming what was tried and what to set: never a traceback.
"""

from __future__ import annotations

import gc
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from ..core.atomic import write_json
from ..core.errors import EmbenchError
from .footprint import human
from .length_groups import micro_sizes
from .memory_estimate import bucket_budget, estimate_step, say_step_memory

log = logging.getLogger(__name__)

FIT_SHARE = 0.8  # a chosen split must fit this share of the device's memory by the estimate (fragmentation, the estimate's 20 %)


class StepOutOfMemory(EmbenchError):
    """A training step that does not fit even split as far as it goes: one message, exit status 3."""

    exit_status = 3


@dataclass(frozen=True)
class StepFit:
    """How a step runs: the process's share of the batch in ``micro_batches`` parts, activations recomputed or not."""

    micro_batches: int
    checkpointing: bool

    def describe(self, examples: int) -> str:
        sizes = micro_sizes(examples, self.micro_batches)
        split = (f"{self.micro_batches} micro-batches of {max(sizes)} example(s)" if self.micro_batches > 1
                 else f"one pass of {examples} example(s)")
        return split + (" with gradient checkpointing" if self.checkpointing else "")

    @classmethod
    def as_set(cls, cfg: Any) -> StepFit:
        """How the run's own options split a step (``--grad-accumulation``, ``--gradient-checkpointing``)."""
        return cls(cfg.grad_accumulation, cfg.gradient_checkpointing)

    def record(self) -> dict[str, Any]:
        """For train_config.json and the metrics."""
        return {"micro_batches": self.micro_batches, "gradient_checkpointing_used": self.checkpointing}


def per_process_examples(cfg: Any, world_size: int) -> int:
    return cfg.batch_size // world_size


def can_checkpoint(model: torch.nn.Module) -> bool:
    """Does ``model`` hold a transformers model that can recompute its activations?"""
    return any(getattr(m, "supports_gradient_checkpointing", False) for m in _transformers(model))


def checkpoint_activations(model: torch.nn.Module) -> None:
    """Gradient checkpointing on in every transformers model ``model`` holds (both towers of JTCSE, a LoRA base)."""
    from .backbone import checkpoint_activations as enable

    for m in _transformers(model):
        if getattr(m, "supports_gradient_checkpointing", False):
            enable(m)


def _transformers(model: torch.nn.Module) -> list[torch.nn.Module]:
    from transformers import PreTrainedModel

    return [m for m in model.modules() if isinstance(m, PreTrainedModel)]


def choose_before_first_step(trainer: Any, announce: Callable[[str], None]) -> StepFit:
    """Say the estimate of a step's memory and, with ``--auto-fit``, the split that fits (every process
    takes the main process's choice)."""
    from . import distributed

    cfg, dist = trainer.cfg, trainer.dist
    as_set = chosen = StepFit.as_set(cfg)
    if dist.is_main:
        est = say_step_memory(trainer, announce, warn=not cfg.auto_fit)
        if est is not None and cfg.auto_fit and est.available:
            chosen = _fitting(trainer, est, as_set)
    parts, checkpointing = distributed.broadcast_ints([chosen.micro_batches, int(chosen.checkpointing)])
    chosen = StepFit(parts, bool(checkpointing))
    if chosen.checkpointing and not as_set.checkpointing:
        checkpoint_activations(trainer.model)
    if dist.is_main and chosen != as_set:
        bucket = bucket_budget(trainer)
        how = (f"GradCache: the loss still sees the whole batch of {cfg.batch_size}" if chosen.micro_batches > 1 else
               f"its texts in length buckets of about {bucket} padded tokens" if bucket else "the update of the whole batch")
        announce(f"memory: each step runs as {chosen.describe(per_process_examples(cfg, dist.world_size))} ({how}), "
                 "so that it fits; --no-auto-fit runs it as set")
    return chosen


def _fitting(trainer: Any, est: Any, start: StepFit) -> StepFit:
    """The smallest split (then with checkpointing) whose estimate fits ``FIT_SHARE`` of the device."""
    cfg = trainer.cfg
    per = per_process_examples(cfg, trainer.dist.world_size)
    room = FIT_SHARE * est.available
    if est.total <= room:
        return start
    options = [(start.checkpointing, est)]
    if not start.checkpointing and can_checkpoint(trainer.model):
        recomputing = estimate_step(trainer, checkpointing=True)
        if recomputing is not None and recomputing.bucket_share < 1 and recomputing.total <= room:
            # one pass in length buckets, recomputed: the compute of a split (8 N a token either way) in fewer,
            # larger passes, padded as little as a split by text
            return StepFit(start.micro_batches, True)
        options.append((True, recomputing))  # tried when no split without it fits
    for checkpointing, e in options:
        if e is None:
            break
        for k in range(start.micro_batches, per + 1):
            if e.with_accumulation(k / cfg.grad_accumulation) <= room:
                return StepFit(k, checkpointing)
    log.warning("one step needs about %s by the estimate and no split of its %d examples brings that under %s of "
                "the device's %s: it is tried as set, and split further if it runs out of memory", human(est.total),
                per, f"{FIT_SHARE:.0%}", human(est.available))
    return StepFit(per, start.checkpointing or can_checkpoint(trainer.model))


def after_out_of_memory(trainer: Any, step: int, error: str) -> StepFit:
    """The split to take step ``step`` again with, after it ran out of memory under ``trainer.step_fit``; raises
    :class:`StepOutOfMemory` when nothing is left to try (or trying is not this run's to do)."""
    cfg, fit = trainer.cfg, trainer.step_fit
    per = per_process_examples(cfg, trainer.dist.world_size)
    where = "GPU memory" if trainer.device.startswith("cuda") else "memory"
    tried = f"step {step + 1} ran as {fit.describe(per)}"
    more = StepFit(min(per, 2 * fit.micro_batches), fit.checkpointing)
    if more == fit and not fit.checkpointing and can_checkpoint(trainer.model):
        more = StepFit(fit.micro_batches, True)
    if more == fit or not cfg.auto_fit or trainer.dist.enabled:
        why = ("nothing smaller is left to try" if more == fit else
               "--no-auto-fit: not split further" if not cfg.auto_fit else
               "several processes do not retry a step on their own")
        fix = (f"--grad-accumulation {more.micro_batches}" + (" --gradient-checkpointing" if more.checkpointing else "")
               + ", or " if more != fit else "")
        raise StepOutOfMemory(
            f"out of {where} ({error}): {tried} (GradCache: the same update as one batch of {cfg.batch_size}); "
            f"{why}. To fit, set {fix}a smaller --max-length, --lora-r R (adapters instead of every weight), "
            f"--precision bf16 (weights in bf16), --set load_kbit=4 (QLoRA), or a smaller --batch-size (fewer in-batch "
            "negatives: another objective); what was saved is kept")
    if more.checkpointing and not fit.checkpointing:
        checkpoint_activations(trainer.model)
    log.warning("out of %s in step %d (%s) as %s: taking it again as %s (the same update)", where, step + 1, error,
                fit.describe(per), more.describe(per))
    return more


def record_refit(trainer: Any, step: int) -> None:
    """Steps from ``step`` on run as ``trainer.step_fit``: said in the metrics and in train_config.json."""
    trainer.emit({"step": step, **trainer.step_fit.record()})
    path = trainer.out / "train_config.json"
    if trainer.dist.is_main and path.is_file():
        write_json(path, {**json.loads(path.read_text(encoding="utf-8")), **trainer.step_fit.record()})


def release_memory(device: str) -> None:
    """What the failed attempt held, given back before the step is taken again."""
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
