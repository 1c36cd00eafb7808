"""How the engine cuts length-sorted texts into batches: by count, or by a token budget.

A batch is padded to its longest text, so what a batch costs is ``texts x longest``: the padded
tokens the model runs. On a CPU a batch of 128 texts keeps the cores busy and padding small once texts
are sorted by length. A GPU needs far larger batches of short texts and smaller ones of long texts to
stay busy without running out of memory: there a batch is cut when its padded tokens would pass a
budget (``--batch-tokens``), and ``--batch-size`` is only a cap on its texts. The default budget is
the one measured fastest on an H100 (``reports/benchmarks/encode_gpu.md``).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..core.defaults import BATCH_SIZE, GPU_BATCH_TOKENS
from ..core.errors import EmbenchError

# On a GPU, texts are tokenised in chunks of this many (ordered by characters, then by tokens inside the
# chunk) so the first batches start while the rest are tokenised; a CPU tokenises everything first.
GPU_TOKENIZE_CHUNK = 4096


def resolve_batching(device: str, batch_size: int | None, batch_tokens: int | None) -> tuple[int | None, int | None]:
    """The (texts cap, token budget) for ``device``: the values given, else 128 texts on a CPU, and the
    measured token budget with no texts cap on a GPU. ``batch_tokens=0`` turns the budget off."""
    if batch_size is not None and batch_size < 1:
        raise EmbenchError(f"--batch-size must be at least 1, got {batch_size}")
    if batch_tokens is not None and batch_tokens < 0:
        raise EmbenchError(f"--batch-tokens must be 0 (no budget) or positive, got {batch_tokens}")
    gpu = not str(device).startswith("cpu")
    if batch_tokens is None:
        batch_tokens = GPU_BATCH_TOKENS if gpu else 0
    if batch_size is None and (not gpu or not batch_tokens):
        batch_size = BATCH_SIZE
    return batch_size, (batch_tokens or None)


def cut_batches(lengths: np.ndarray, batch_size: int | None, batch_tokens: int | None) -> Iterator[tuple[int, int]]:
    """(start, end) of each batch over ``lengths`` sorted longest first: at most ``batch_size`` texts and,
    with a budget, at most ``batch_tokens`` padded tokens (texts x the first, longest, text's length).
    A text longer than the budget goes alone."""
    n = len(lengths)
    start = 0
    while start < n:
        size = n - start if batch_size is None else min(batch_size, n - start)
        if batch_tokens:
            size = max(1, min(size, batch_tokens // max(int(lengths[start]), 1)))
        yield start, start + size
        start += size
