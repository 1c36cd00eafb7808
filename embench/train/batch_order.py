"""Which examples each step trains on, the same in a resumed run as in the run it continues."""

from __future__ import annotations

import functools
import random

from . import distributed


def batch_indices(n: int, global_batch: int, step: int, seed: int, dist: distributed.DistInfo) -> list[int]:
    """This process's example indices at ``step`` (0-based): a seeded shuffle per epoch, cut into
    global batches, each split evenly over processes. Deterministic, so a resumed run sees the
    batches the interrupted one would have."""
    per_epoch = n // global_batch
    epoch, pos = divmod(step, per_epoch)
    batch = list(epoch_order(n, seed, epoch)[pos * global_batch : (pos + 1) * global_batch])
    local = global_batch // dist.world_size
    return batch[dist.rank * local : (dist.rank + 1) * local]


@functools.lru_cache(maxsize=1)
def epoch_order(n: int, seed: int, epoch: int) -> tuple[int, ...]:
    """The epoch's shuffled order, made once per epoch rather than once per step: a Python shuffle of Wiki1M's
    10^6 indices takes most of a second, longer than a SimCSE step on a GPU."""
    order = list(range(n))
    random.Random(seed * 1_000_003 + epoch).shuffle(order)
    return tuple(order)
