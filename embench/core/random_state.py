"""The caller's random state, kept across a call of embench's Python API.

A call must leave the caller's random numbers where they were: ``torch.manual_seed(0); embench.evaluate(...)``
and then ``torch.rand(1)`` draws what it would have drawn without the call. Inside, mteb seeds Python's
``random``, numpy's global generator and torch's (CPU and every CUDA device) with its 42 when it is imported
and whenever it builds a task or an evaluator, and a model load draws the weights its checkpoint lacks from
torch's generator; embench's own seeded steps draw from generators of their own (SentEval's layers: a fork of
the CPU generator, ``tasks/senteval/relatedness.py`` and ``fits.py``).
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def kept_random_state() -> Iterator[None]:
    """Python's, numpy's global and torch's generators as they were before the block, whatever it draws or seeds.

    Only generators the caller can have set are saved (numpy's and torch's once imported, CUDA's once initialised):
    saving torch's CUDA state would initialise CUDA, seconds on a machine where the call may never use it."""
    np, torch = sys.modules.get("numpy"), sys.modules.get("torch")
    python_state = random.getstate()
    numpy_state = np.random.get_state() if np is not None else None
    torch_state = torch.get_rng_state() if torch is not None else None
    cuda_state = torch.cuda.get_rng_state_all() if torch is not None and torch.cuda.is_initialized() else None
    try:
        yield
    finally:
        random.setstate(python_state)
        if numpy_state is not None:
            np.random.set_state(numpy_state)
        if torch_state is not None:
            torch.set_rng_state(torch_state)
        if cuda_state is not None:
            torch.cuda.set_rng_state_all(cuda_state)
