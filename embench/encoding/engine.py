"""The encoding engine: the one place that turns texts into vectors.

Texts are deduplicated (across every task of a run: the engine keeps what it encoded), looked up in
the disk cache, sorted by token length and encoded in batches padded to their own longest text,
without autograd. Vectors are checked for NaN/inf before anything is stored. Finished batches are
written to the cache as encoding goes, so an interrupted run keeps them: every ``FLUSH_EVERY`` texts (shards
of a useful size on a fast GPU), and at least every ``FLUSH_SECONDS`` (a kill -9, which no handler sees,
loses at most that much work, where 4,096 texts can take minutes on a CPU).
"""

from __future__ import annotations

import contextlib
import logging
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..core.errors import EmbenchError
from ..core.gc_freeze import older_objects_frozen
from ..core.signals import interrupts_held
from ..report.progress import RateProgress, announce, third_party_bars
from .allocator import keep_batch_memory, release_batch_memory
from .batch_forward import forward_halving
from .batching import batches as _batches
from .batching import resolve_batching
from .cache import EmbeddingCache, keyed_texts, text_key
from .encoder_interface import Encoder
from .landed_chunks import ChunkLanding
from .prompted import prompted_engine
from .row_gather import RowGather

log = logging.getLogger(__name__)
FLUSH_EVERY = 4096  # texts between cache writes
FLUSH_SECONDS = 30.0  # and at most this long between them, whatever the count


class Engine:
    """Encodes texts with one encoder, once per unique text.

    >>> engine = Engine(encoder, batch_size=128, cache_dir=None)   # doctest: +SKIP
    >>> vectors = engine.embed(["a sentence", "another"])            # doctest: +SKIP
    """

    def __init__(
        self,
        encoder: Encoder,
        *,
        batch_size: int | None = None,
        batch_tokens: int | None = None,
        cache_dir: Path | str | None = None,
        progress: bool = False,
    ):
        """``batch_size`` caps the texts of a batch and ``batch_tokens`` its padded tokens (0: no budget);
        ``None`` takes the device's default (:func:`~embench.encoding.batching.resolve_batching`: 128 texts
        on a CPU, a token budget on a GPU); ``batch_tokens`` defaults to the encoder's own (``load_model(...,
        batch_tokens=)``)."""
        self.encoder = encoder
        if batch_tokens is None:
            batch_tokens = getattr(encoder, "batch_tokens", None)
        self.batch_size, self.batch_tokens = resolve_batching(str(getattr(encoder, "device", "cpu")), batch_size,
                                                              batch_tokens)
        self.cache = EmbeddingCache(Path(cache_dir), encoder.cache_key()) if cache_dir is not None else None
        if self.cache is not None:
            self.cache.check_writable()  # before any encoding: an unwritable cache warns now, then is read-only
        self.progress = progress
        self._memory: dict[str, np.ndarray] = {}
        self._gathers: list[RowGather] = []  # the outputs of the embed() calls under way (row_gather.py)
        self.encoded_elsewhere: set[str] = set()  # keys a split pass put in the cache for it (models/devices.py)
        self.stats = {"requested": 0, "unique": 0, "from_cache": 0, "encoded": 0, "encode_seconds": 0.0,
                      "forward_batches": 0, "oom_splits": 0, "padded_tokens": 0}  # batches' texts x longest (batching.py)

    def embed(self, texts: Sequence[str], prompt: dict[str, str | None] | None = None) -> np.ndarray:
        """Vectors for ``texts``, in order (duplicates included); ``prompt``: a side's or task's (:mod:`.prompted`)."""
        if prompt:
            return prompted_engine(self, prompt).embed(texts)
        with older_objects_frozen():  # no full garbage collection walks the process's objects mid-pass
            keyed = keyed_texts(texts)  # a text UTF-8 cannot hold: an error naming its index
            self.stats["requested"] += len(keyed)
            if not keyed:
                return np.zeros((0, 0), dtype=np.float32)
            gather = RowGather([k for k, _ in keyed])  # written as the pass's chunks land, not stacked after it
            self._gathers.append(gather)
            try:
                self._ensure([keyed])
            finally:
                self._gathers.remove(gather)
            return gather.finish(self._memory)

    dim = property(lambda self: len(next(iter(self._memory.values()))) if self._memory else None)  # vector length (records keep it)

    def prefetch(self, groups: Sequence[Sequence[str]]) -> list[dict[str, int]]:
        """Encode the texts of several tasks in one pass, sorted by length across all of them.

        Returns, per group, how many of its texts this call encoded and read from the cache; a text
        shared by several groups counts for the first that asks for it. Later :meth:`embed` calls for
        these texts are memory hits.
        """
        with older_objects_frozen():
            return self._ensure([keyed_texts(texts) for texts in groups])

    def _ensure(self, groups: list[list[tuple[str, str]]]) -> list[dict[str, int]]:
        """Put every (key, text) of ``groups`` in memory: from memory, the disk cache, or one encoding pass."""
        elsewhere = set(self.encoded_elsewhere)  # read from the cache, but encoded by this run: counted so
        owned, todo, hits = self._lookup(groups)
        rest = [k for k in todo if k not in hits]
        if rest:
            shared_pass([self], rest, [todo[k] for k in rest], [set(rest)])
        return [{"encoded": sum(k not in hits or k in elsewhere for k in mine),
                 "from_cache": sum(k in hits and k not in elsewhere for k in mine)} for mine in owned]

    def missing(self, texts: Sequence[str]) -> list[str]:
        """The texts (once each) that neither this engine's memory nor its cache holds."""
        keyed = dict(keyed_texts(texts))
        todo = [k for k in keyed if k not in self._memory]
        stored = self.cache.stored(todo) if self.cache is not None and todo else set()
        return [keyed[k] for k in todo if k not in stored]

    def release(self) -> None:
        """Let go of the vectors held in memory (those written to the cache stay there): an analysis that is
        done with one view frees it before the next view's tasks run."""
        self._memory.clear()

    def _lookup(self, groups: list[list[tuple[str, str]]]) -> tuple[list[list[str]], dict[str, str], set[str]]:
        """Per group the keys it brings first; every key not in memory (with its text); those found on disk."""
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
            hits = set(found)
            elsewhere, self.encoded_elsewhere = self.encoded_elsewhere & hits, self.encoded_elsewhere - hits
            self.stats["from_cache"] += len(found) - len(elsewhere)  # those are in stats["encoded"] already
        return owned, todo, hits


def embed_views(engines: Sequence[Engine], texts: Sequence[str]) -> list[np.ndarray]:
    """The vectors of ``texts`` under every engine's encoder, from one forward pass per batch
    (:func:`fill_views`), one array per engine."""
    fill_views(engines, texts)
    if not texts:
        return [np.zeros((0, 0), dtype=np.float32) for _ in engines]
    keys = [text_key(t) for t in texts]
    return [np.stack([e._memory[k] for k in keys]) for e in engines]


def fill_views(engines: Sequence[Engine], texts: Sequence[str]) -> None:
    """Put the vectors of ``texts`` under every engine's encoder in that engine's memory (and cache), from
    one forward pass per batch, without stacking them: a caller that reads one view at a time
    (:meth:`Engine.embed`, a memory hit) holds one array, not one per view.

    The encoders must be views of one model (:meth:`HFEncoder.view`: any layers x poolers, one maximum
    length, dtype and prompt). Each engine keeps its own memory and cache folder, so a later request
    for one view alone is a hit. A text that some views lack is encoded once for all the views that
    lack it; views that have every text are not computed. Encoders without ``encode_views``
    (ensembles, custom encoders) are served one at a time.
    """
    with older_objects_frozen():
        _fill_views(engines, texts)


def _fill_views(engines: Sequence[Engine], texts: Sequence[str]) -> None:
    if not all(hasattr(e.encoder, "encode_views") for e in engines):
        for e in engines:
            e.stats["requested"] += len(texts)
            e.prefetch([texts])
        return
    passes = {e.encoder.pass_key() for e in engines}
    if len(passes) > 1:
        raise EmbenchError("views served by one forward pass must share one model, maximum length, dtype and prompt; got: "
                           + "; ".join(dict.fromkeys(f"{e.encoder.name} (max length {e.encoder.settings.max_length}, "
                                                     f"{e.encoder.settings.dtype})" for e in engines)))
    keyed = keyed_texts(texts)
    todo: dict[str, str] = {}
    missing: list[set[str]] = []
    for e in engines:
        e.stats["requested"] += len(keyed)
        _, mine, hits = e._lookup([keyed])
        lacking = {k for k in mine if k not in hits}
        missing.append(lacking)
        for k in lacking:
            todo.setdefault(k, mine[k])
    if todo:
        needing = [i for i, m in enumerate(missing) if m]
        shared_pass([engines[i] for i in needing], list(todo), list(todo.values()), [missing[i] for i in needing])


def shared_pass(engines: Sequence[Engine], keys: list[str], texts: list[str], wanted: Sequence[set[str]]) -> None:
    """Encode ``texts`` once, sorted by token length, for every engine (views of one model): engine i
    keeps, in memory and in its cache, the vectors of the keys in ``wanted[i]``. Finished batches are
    flushed to the caches as encoding goes, so an interruption keeps them."""
    first = engines[0]
    empty = sum(not t.strip() for t in texts)
    if empty:
        warnings.warn(
            f"{empty} empty text(s) encoded as they are (only special tokens); they are not dropped",
            stacklevel=4,  # the caller of embed(), prefetch() or embed_views()
        )
    if first.progress and getattr(first.encoder, "loaded", True) is False:  # the weights are read now: say which
        d = first.encoder.describe()
        announce(True, f"loading {d.get('name')} from {d.get('source')} ({d.get('pooling')} pooling, "
                       f"{d.get('dtype')}, {d.get('device')})")
    with third_party_bars(first.progress):
        _encode_sorted(engines, keys, texts, wanted)


def _encode_sorted(engines: Sequence[Engine], keys: list[str], texts: list[str], wanted: Sequence[set[str]]) -> None:
    import torch  # here, not at import: commands that never encode do not load torch

    from .host_copies import HostCopies

    first = engines[0]
    encoder = first.encoder
    on_cpu = str(getattr(encoder, "device", "cpu")).startswith("cpu")
    if on_cpu:
        keep_batch_memory()  # batches reuse the last one's memory instead of faulting it in again
    landing = ChunkLanding(engines, keys, texts, wanted, FLUSH_EVERY)
    copies = HostCopies(landing, FLUSH_EVERY)
    views = [e.encoder for e in engines]
    what = encoder.name if len(engines) == 1 else f"{encoder.name}, {len(engines)} views in one pass"
    batches = 0
    start = flushed = time.perf_counter()
    try:
        with RateProgress(first.progress, "encoding", what, len(texts), "texts", ">7.0f", transient=True) as bar:
            for idx, batch, enc in _batches(first, texts, on_cpu):
                if enc is not None:
                    outs = forward_halving(first, batch, views, enc)
                else:
                    outs = [torch.from_numpy(np.asarray(encoder.encode_batch(batch), dtype=np.float32))]
                first.stats["forward_batches"] += 1
                batches += 1
                with interrupts_held():  # a chunk leaves the batches and the one before it lands whole (landed_chunks.py)
                    copies.add(idx, outs)
                bar.advance(len(idx))
                if time.perf_counter() - flushed >= FLUSH_SECONDS:  # every vector so far to the host, then to disk
                    with interrupts_held():  # (waits for the device once: nothing against FLUSH_SECONDS of its work)
                        copies.close()
                    landing.flush_all()
                    flushed = time.perf_counter()
            with interrupts_held():
                copies.close()
    except BaseException:
        with interrupts_held(), contextlib.suppress(Exception):  # an interruption keeps the batches already computed
            copies.close()
        raise
    finally:
        elapsed = time.perf_counter() - start
        landing.flush_all()  # every view's, before an interrupt goes on
        for e in engines:
            e.stats["encode_seconds"] += elapsed / len(engines)
        if on_cpu and batches > 1:  # a pass of one batch keeps its memory for the next call's batch
            release_batch_memory()  # the scoring that follows does not need the batches' memory kept

