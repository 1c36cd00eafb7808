"""What becomes of each chunk of vectors that reaches the host during an encoding pass (``engine._encode_sorted``):
checked for NaN/inf, kept in each engine's memory and in the outputs under way, and written to each engine's cache
every ``flush_every`` texts and at the end of the pass.

An interrupt (Ctrl-C, or SIGTERM: core/signals.py) takes effect between these steps, never inside one, so an
interrupted pass keeps every vector it computed, as the README promises. Raised inside a shard's write, it removed the
shard's temporary file: the vectors of that chunk were lost, and so were those of every view whose flush came after
it. Here a shard is written and taken off its engine's pending list as one step, and the last flush writes every
view's pending vectors before a held interrupt goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..core.errors import EmbeddingError
from ..core.signals import interrupts_held

if TYPE_CHECKING:
    from .engine import Engine


def flush(engine: Engine, keys: list[str], vecs: list[np.ndarray]) -> None:
    """Write ``keys`` with their vectors (``vecs``: arrays of rows, in the keys' order) to ``engine``'s cache, and
    empty both lists: both happen, or neither (an interrupt in between would write the shard again, or lose it)."""
    with interrupts_held():
        if engine.cache is not None and keys:
            engine.cache.put_many(list(keys), np.concatenate(vecs))
        keys.clear()
        vecs.clear()


class ChunkLanding:
    """The ``landed`` callback of :class:`~.host_copies.HostCopies` for one pass over ``engines`` (views of one model):
    engine i keeps the vectors of the keys in ``wanted[i]``."""

    def __init__(self, engines: Sequence[Engine], keys: list[str], texts: list[str], wanted: Sequence[set[str]],
                 flush_every: int):
        self.engines, self.keys, self.texts, self.wanted, self.flush_every = engines, keys, texts, wanted, flush_every
        self.pending: list[tuple[list[str], list[np.ndarray]]] = [([], []) for _ in engines]  # per engine: to cache

    def __call__(self, idx: np.ndarray, arrays: list[np.ndarray]) -> None:
        """A chunk of vectors is on the host: check it, keep each engine's wanted keys, write them to its cache.
        A whole chunk at a time, not text by text: on a GPU the last chunk's handling is host time with the GPU idle."""
        chunk_keys = [self.keys[i] for i in idx.tolist()]
        for e, vecs, want, (pk, pv) in zip(self.engines, arrays, self.wanted, self.pending, strict=True):
            bad = ~np.isfinite(vecs).all(axis=1)
            if bad.any():
                t = self.texts[int(idx[int(np.flatnonzero(bad)[0])])]
                raise EmbeddingError(f"the embedding of {t!r} contains NaN or inf ({e.encoder.name})")
            mine = chunk_keys
            if len(want) < len(self.keys):  # this engine keeps only the texts it lacked (views of one pass: fill_views)
                rows = [j for j, k in enumerate(chunk_keys) if k in want]
                mine, vecs = [chunk_keys[j] for j in rows], vecs[rows]
            e._memory.update(zip(mine, vecs, strict=True))  # each key: its row of the chunk's array
            for gather in e._gathers:
                gather.take(mine, vecs)
            e.stats["encoded"] += len(mine)
            if e.cache is not None:
                pk.extend(mine)
                pv.append(vecs)
                if len(pk) >= self.flush_every:
                    flush(e, pk, pv)

    def flush_all(self) -> None:
        """Each engine's vectors not yet in its cache; an interrupt meanwhile waits until every view's are written."""
        with interrupts_held():
            for e, (pk, pv) in zip(self.engines, self.pending, strict=True):
                flush(e, pk, pv)
