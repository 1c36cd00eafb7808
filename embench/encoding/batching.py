"""How the engine cuts length-sorted texts into batches: by count, or by a token budget.

A batch is padded to its longest text, so what a batch costs is ``texts x longest``: the padded
tokens the model runs. On a CPU a batch of 128 texts keeps the cores busy and padding small once texts
are sorted by length. A GPU needs far larger batches of short texts and smaller ones of long texts to
stay busy without running out of memory: there no batch's padded tokens pass a budget
(``--batch-tokens``), the batches cut where they pad least (``cut_batches``), and ``--batch-size`` is only
a cap on their texts. The default budget is the one measured fastest on an H100
(``reports/benchmarks/encode_gpu.md``). :func:`batches` yields a
pass's batches, tokenised once and padded from the same ids.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..core.arguments import whole_number
from ..core.defaults import BATCH_SIZE, GPU_BATCH_TOKENS
from ..core.errors import EmbenchError
from ..core.length_cuts import FLOOR_SHARE, least_cost_cuts

# On a GPU, texts are tokenised in chunks (ordered by characters, then by tokens inside the chunk) so the
# first batches start while the rest are tokenised; a CPU tokenises everything first. The first chunk is
# tokenised before any forward pass (the GPU idles meanwhile); a batch never spans two chunks, so the later
# chunks' size bounds how full a token-budget batch can be. `benchmarks/encode_gpu.py --chunks` measures
# other sizes against these.
GPU_FIRST_CHUNK = 4096
GPU_TOKENIZE_CHUNK = 4096


def check_batching(batch_size: Any, batch_tokens: Any) -> None:
    """A texts cap of at least 1 and a token budget of 0 (none) or more, each a whole number or None; the Python API
    checks them with it before a model loads (:mod:`embench.evaluation.api_arguments`)."""
    whole_number(batch_size, "--batch-size", least=None)  # 1.5 or "32" from Python: said here, not in a slice
    whole_number(batch_tokens, "--batch-tokens", least=None)
    if batch_size is not None and batch_size < 1:
        raise EmbenchError(f"--batch-size must be at least 1, got {batch_size}")
    if batch_tokens is not None and batch_tokens < 0:
        raise EmbenchError(f"--batch-tokens must be 0 (no budget) or positive, got {batch_tokens}")


def resolve_batching(device: str, batch_size: int | None, batch_tokens: int | None) -> tuple[int | None, int | None]:
    """The (texts cap, token budget) for ``device``: the values given, else 128 texts on a CPU, and the
    measured token budget with no texts cap on a GPU. ``batch_tokens=0`` turns the budget off."""
    check_batching(batch_size, batch_tokens)
    gpu = not str(device).startswith("cpu")
    if batch_tokens is None:
        batch_tokens = GPU_BATCH_TOKENS if gpu else 0
    if batch_size is None and (not gpu or not batch_tokens):
        batch_size = BATCH_SIZE
    return batch_size, (batch_tokens or None)


def cut_batches(lengths: np.ndarray, batch_size: int | None, batch_tokens: int | None,
                least_padding: bool = True) -> Iterator[tuple[int, int]]:
    """(start, end) of each batch over ``lengths`` sorted longest first: at most ``batch_size`` texts and,
    with a budget, at most ``batch_tokens`` padded tokens (texts x the first, longest, text's length).
    A text longer than the budget goes alone.

    With a budget the cuts are those of least padding (``core.length_cuts``), a batch counted as at least a
    quarter of the budget (``core.length_cuts.FLOOR_SHARE``), not each batch filled in turn: on sts-all's texts, chunked as a
    GPU tokenises them, batches of 65,536 padded 372.6k real tokens to 574k when filled in turn and to 435k now.
    ``least_padding=False`` fills them in turn (CUDA graphs' bucketed shapes count on full batches)."""
    n = len(lengths)
    if batch_tokens and least_padding:
        bounds = least_cost_cuts(np.asarray(lengths).tolist(), batch_tokens, batch_tokens // FLOOR_SHARE, batch_size)
        yield from itertools.pairwise(bounds)
        return
    start = 0
    while start < n:
        size = n - start if batch_size is None else min(batch_size, n - start)
        if batch_tokens:
            size = max(1, min(size, batch_tokens // max(int(lengths[start]), 1)))
        yield start, start + size
        start += size


def batches(engine: Any, texts: list[str], on_cpu: bool) -> Iterator[tuple[np.ndarray, list[str], dict | None]]:
    """(row indices, texts, padded inputs on the device) of each batch, longest texts first.

    Texts are tokenised once and sorted by token length; each batch is padded from the same ids. On a CPU
    every text is tokenised first (one global order, as batch-size independence tests expect); on a GPU
    the texts, ordered by characters, are tokenised in chunks, each sorted by tokens, so the GPU runs
    the first chunk's batches (queued without waiting) while the host tokenises the next.
    """
    encoder = engine.encoder
    if not hasattr(encoder, "pretokenize"):  # an encoder that only encodes whole batches of texts
        lengths = np.asarray(encoder.token_lengths(texts), dtype=np.int64)
        order = np.argsort(-lengths, kind="stable")
        for lo, hi in cut_batches(lengths[order], engine.batch_size, engine.batch_tokens):
            idx = order[lo:hi]
            engine.stats["padded_tokens"] += (hi - lo) * int(lengths[idx[0]])
            yield idx, [texts[i] for i in idx], None
        return
    if on_cpu or len(texts) <= GPU_FIRST_CHUNK:
        chunks = [np.arange(len(texts))]
    else:
        by_chars = np.argsort(-np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), kind="stable")
        chunks = split_chunks(by_chars, GPU_FIRST_CHUNK, GPU_TOKENIZE_CHUNK)
    if len(chunks) == 1:
        yield from _chunk_batches(engine, texts, encoder.pretokenize(texts), chunks[0])
        return
    # the next chunk is tokenised on a second thread (the Rust tokenizer runs without the GIL) while this one's
    # batches are padded and their forward passes queued
    with ThreadPoolExecutor(max_workers=1) as pool:
        for tokens, chunk in _tokenised_chunks(pool, encoder, texts, chunks):
            yield from _chunk_batches(engine, texts, tokens, chunk)


def split_chunks(order: np.ndarray, first: int, size: int) -> list[np.ndarray]:
    """``order`` cut into a first chunk of ``first`` items and then chunks of ``size`` (the last one shorter)."""
    if first < 1 or size < 1:
        raise EmbenchError(f"tokenisation chunks must hold at least one text, got first={first}, size={size}")
    starts = [0, *range(first, len(order), size)] if len(order) > first else [0]
    return [order[a:b] for a, b in zip(starts, [*starts[1:], len(order)], strict=True)]


def _tokenised_chunks(pool: ThreadPoolExecutor, encoder, texts: list[str], chunks: list[np.ndarray]) -> Iterator[tuple[dict, np.ndarray]]:
    ahead = pool.submit(encoder.pretokenize, [texts[i] for i in chunks[0]])
    for c, chunk in enumerate(chunks):
        tokens = ahead.result()
        if c + 1 < len(chunks):
            ahead = pool.submit(encoder.pretokenize, [texts[i] for i in chunks[c + 1]])
        yield tokens, chunk


def _chunk_batches(engine: Any, texts: list[str], tokens: dict, chunk: np.ndarray) -> Iterator[tuple[np.ndarray, list[str], dict]]:
    """The batches of one tokenised chunk, longest texts first. With CUDA graphs (``--cuda-graphs``) batches are
    cut by bucketed widths and padded to the bucket's shape (:mod:`.cuda_graphs`)."""
    lengths = np.fromiter(map(len, tokens["input_ids"]), dtype=np.int64, count=len(chunk))
    order = np.argsort(-lengths, kind="stable")
    graphs = getattr(engine.encoder, "graphs", None)
    widths = lengths[order] if graphs is None else graphs.widths(lengths[order])
    for lo, hi in cut_batches(widths, engine.batch_size, engine.batch_tokens, least_padding=graphs is None):
        local = order[lo:hi]
        features = {k: [v[i] for i in local] for k, v in tokens.items()}
        shape = None if graphs is None else graphs.shape(int(widths[lo]), hi - lo, engine.batch_size, engine.batch_tokens)
        engine.stats["padded_tokens"] += (hi - lo) * int(widths[lo]) if shape is None else shape[0] * shape[1]
        enc = engine.encoder.collate(features, shape)
        yield chunk[local], [texts[i] for i in chunk[local]], enc
