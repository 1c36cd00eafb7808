"""Which examples each step trains on, the same in a resumed run as in the run it continues.

An epoch is ``ceil(n / global_batch)`` steps, its last batch the ``n mod global_batch`` examples left, as the
authors' loaders train on them: SimCSE's and MultiCSR's ``Trainer`` (``dataloader_drop_last`` False), BeLLM's
through AnglE's ``fit`` (the same ``Trainer``), JTCSE's ``train_jtcse_bert.py`` (``DataLoader(..., shuffle=True)``)
and the cropping code's ``DataLoader`` (its warm-up and horizon from ``len(loader)``). Gradient accumulation splits
a step's batch (``accumulation.py``), so the last batch is one step, as ``Trainer`` makes a last group of fewer
micro-batches one update (``ceil(len(loader) / accumulation)`` per epoch). ``drop_last`` (``--set drop_last=true``; embench's only behaviour before
2026-11-29) leaves them out: ``n // global_batch`` steps.
"""

from __future__ import annotations

import functools
import random

from . import distributed


def steps_per_epoch(n: int, global_batch: int, drop_last: bool = False) -> int:
    """Steps in one epoch of ``n`` examples: the last, smaller batch counted unless ``drop_last``."""
    return n // global_batch if drop_last else -(-n // global_batch)


def batch_indices(n: int, global_batch: int, step: int, seed: int, dist: distributed.DistInfo,
                  drop_last: bool = False) -> list[int]:
    """This process's example indices at ``step`` (0-based): a seeded shuffle per epoch, cut into
    global batches, each split evenly over processes. Deterministic, so a resumed run sees the
    batches the interrupted one would have. An epoch's last batch may be smaller (``steps_per_epoch``); over
    several processes it is filled up to a multiple of their number with the epoch's first examples, as
    torch's ``DistributedSampler`` (``drop_last=False``) pads an epoch: every process then embeds as many texts,
    which the gathers of the loss (``distributed.gather_with_grad``) and DDP's collectives need."""
    per_epoch = steps_per_epoch(n, global_batch, drop_last)
    epoch, pos = divmod(step, per_epoch)
    order = epoch_order(n, seed, epoch)
    batch = list(order[pos * global_batch : (pos + 1) * global_batch])
    short = -len(batch) % dist.world_size
    batch += [order[i % n] for i in range(short)]  # (i % n: fewer examples than processes)
    local = len(batch) // dist.world_size
    return batch[dist.rank * local : (dist.rank + 1) * local]


@functools.lru_cache(maxsize=1)
def epoch_order(n: int, seed: int, epoch: int) -> tuple[int, ...]:
    """The epoch's shuffled order, made once per epoch rather than once per step: a Python shuffle of Wiki1M's
    10^6 indices takes most of a second, longer than a SimCSE step on a GPU."""
    order = list(range(n))
    random.Random(seed * 1_000_003 + epoch).shuffle(order)
    return tuple(order)
