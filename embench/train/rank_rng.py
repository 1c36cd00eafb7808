"""Each process's random state in the resume checkpoint, and each process's own back on ``--resume``.

Every process is seeded ``seed + rank`` (its dropout masks differ from the others'), so one saved state, the main
process's, restored in every process, gave the other processes another stream of dropout noise: a resumed run
of two processes left the uninterrupted one from its first step after the checkpoint. The main process gathers
every process's state and keeps them all in ``state.pt``; each process restores the one at its rank.

Resumed with another number of processes, no process's stream from before carries over as it would have gone on
(a process's share of the global batch is another one): each process then starts a stream of its own, seeded from
the seed, its rank and the step, and a warning says that the steps from here do not repeat those of an
uninterrupted run. The batches are the same either way (``batch_order.py``).
"""

from __future__ import annotations

import hashlib
import logging
import random
from typing import Any

import numpy as np
import torch
import torch.distributed as torch_dist

from .checkpoints import rng_state, set_rng_state
from .distributed import DistInfo

log = logging.getLogger(__name__)


def gather_rng_states(dist: DistInfo) -> list[dict[str, Any]]:
    """Every process's random state in rank order (a collective: every process calls it); one process: its own."""
    mine = rng_state()
    if not dist.enabled or not torch_dist.is_initialized():
        return [mine]
    states: list[Any] = [None] * dist.world_size
    torch_dist.all_gather_object(states, mine)  # on the wire only: the checkpoint keeps tensors and plain values
    return states


def restore_rng_states(state: dict[str, Any], dist: DistInfo, seed: int, step: int) -> None:
    """This process's random state from the resume ``state``: its own where the checkpoint holds one per process of
    this run's number, else a fresh stream of its own (said once, by the main process)."""
    saved = [state["rng"], *state.get("rng_other_ranks", [])]  # an earlier embench kept the main process's alone
    if len(saved) == dist.world_size:
        set_rng_state(saved[dist.rank])
        return
    if dist.is_main:
        log.warning("--resume: the checkpoint holds the random states of %d process(es), this run has %d: each "
                    "process draws its dropout from a new stream of its own from here (the same batches; the steps "
                    "do not repeat those of an uninterrupted run)", len(saved), dist.world_size)
    seed_all(stream_seed(seed, step, dist.rank))


def stream_seed(seed: int, step: int, rank: int) -> int:
    """A seed for ``rank`` from ``step`` on: another for every process and step, none of them ``seed + rank``."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{step}:{rank}".encode()).digest()[:7], "big")


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
