"""The encoding engine: the one place that turns texts into vectors.

Texts are deduplicated (across every task of a run: the engine keeps what it encoded), looked up in
the disk cache, sorted by token length and encoded in batches padded to their own longest text,
without autograd. Vectors are checked for NaN/inf before anything is stored. Finished batches are
written to the cache as encoding goes, so an interrupted run keeps them.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..core.errors import EmbeddingError, EmbenchError
from ..models.encoder import Encoder
from ..report.progress import RateProgress
from .cache import EmbeddingCache, text_key

log = logging.getLogger(__name__)
FLUSH_EVERY = 4096  # texts between cache writes


class Engine:
    """Encodes texts with one encoder, once per unique text.

    >>> engine = Engine(encoder, batch_size=128, cache_dir=None)   # doctest: +SKIP
    >>> vectors = engine.embed(["a sentence", "another"])            # doctest: +SKIP
    """

    def __init__(
        self,
        encoder: Encoder,
        *,
        batch_size: int = 128,
        cache_dir: Path | str | None = None,
        progress: bool = False,
    ):
        if batch_size < 1:
            raise EmbenchError(f"--batch-size must be at least 1, got {batch_size}")
        self.encoder = encoder
        self.batch_size = batch_size
        self.cache = EmbeddingCache(Path(cache_dir), encoder.cache_key()) if cache_dir is not None else None
        if self.cache is not None:
            self.cache.check_writable()  # before any encoding: an unwritable cache warns now, then is read-only
        self.progress = progress
        self._memory: dict[str, np.ndarray] = {}
        self.stats = {"requested": 0, "unique": 0, "from_cache": 0, "encoded": 0, "encode_seconds": 0.0}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts``, in order (one row per input text, duplicates included)."""
        keyed = [(text_key(t), t) for t in texts]
        self.stats["requested"] += len(keyed)
        self._ensure([keyed])
        if not keyed:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._memory[k] for k, _ in keyed])

    def prefetch(self, groups: Sequence[Sequence[str]]) -> list[dict[str, int]]:
        """Encode the texts of several tasks in one pass, sorted by length across all of them.

        Returns, per group, how many of its texts this call encoded and read from the cache; a text
        shared by several groups counts for the first that asks for it. Later :meth:`embed` calls for
        these texts are memory hits.
        """
        return self._ensure([[(text_key(t), t) for t in texts] for texts in groups])

    def _ensure(self, groups: list[list[tuple[str, str]]]) -> list[dict[str, int]]:
        """Put every (key, text) of ``groups`` in memory: from memory, the disk cache, or one encoding pass."""
        owned: list[list[str]] = []
        todo: dict[str, str] = {}
        for keyed in groups:
            mine = []
            for k, t in keyed:
                if k not in self._memory and k not in todo:
                    todo[k] = t
                    mine.append(k)
            owned.append(mine)
        self.stats["unique"] += len(todo)
        hits: set[str] = set()
        if todo and self.cache is not None:
            found = self.cache.get_many(list(todo))
            self._memory.update(found)
            self.stats["from_cache"] += len(found)
            hits = set(found)
        rest = [k for k in todo if k not in hits]
        if rest:
            self._encode(rest, [todo[k] for k in rest])
        return [{"encoded": sum(k not in hits for k in mine), "from_cache": sum(k in hits for k in mine)} for mine in owned]

    def _encode(self, keys: list[str], texts: list[str]) -> None:
        empty = [t for t in texts if not t.strip()]
        if empty:
            warnings.warn(
                f"{len(empty)} empty text(s) encoded as they are (only special tokens); they are not dropped",
                stacklevel=4,  # the caller of embed() or of prefetch()
            )
        lengths = self.encoder.token_lengths(texts)
        order = np.argsort(-lengths, kind="stable")
        pending_keys: list[str] = []
        pending_vecs: list[np.ndarray] = []
        start = time.perf_counter()
        try:
            with RateProgress(self.progress, "encoding", self.encoder.name, len(texts), "texts", ">7.0f", transient=True) as bar:
                for b in range(0, len(order), self.batch_size):
                    idx = order[b : b + self.batch_size]
                    batch = [texts[i] for i in idx]
                    vecs = self.encoder.encode_batch(batch)
                    bad = ~np.isfinite(vecs).all(axis=1)
                    if bad.any():
                        t = batch[int(np.flatnonzero(bad)[0])]
                        raise EmbeddingError(f"the embedding of {t!r} contains NaN or inf ({self.encoder.name})")
                    for i, v in zip(idx, vecs, strict=True):
                        self._memory[keys[i]] = v
                        pending_keys.append(keys[i])
                        pending_vecs.append(v)
                    self.stats["encoded"] += len(idx)
                    if len(pending_keys) >= FLUSH_EVERY:
                        self._flush(pending_keys, pending_vecs)
                    bar.advance(len(idx))
        finally:
            self._flush(pending_keys, pending_vecs)
            self.stats["encode_seconds"] += time.perf_counter() - start

    def _flush(self, keys: list[str], vecs: list[np.ndarray]) -> None:
        if self.cache is not None and keys:
            self.cache.put_many(list(keys), np.stack(vecs))
        keys.clear()
        vecs.clear()
