"""The on-disk embedding cache: many writers, never a wrong vector, never fatal.

One folder per encoder configuration (``Encoder.cache_key()``: weights fingerprint, pooling, layer,
maximum length, dtype, normalisation, prompt). Each write adds one shard, a single ``.npz`` file
holding the text keys, their float32 vectors and a blake2b checksum of both:

* its name is unique (time, process, random part), so concurrent writers — processes on one machine
  or machines sharing the folder — never pick the same shard, and no lock is needed;
* keys and vectors are one file, written under a hidden temporary name and renamed into place, so a
  reader sees a whole shard or none, and never one writer's keys beside another's vectors;
* on read, the row counts of keys and vectors must agree and the checksum must match (zip's CRC
  covers each member too). A shard that fails is named in a warning, renamed ``*.damaged`` (set
  aside; in a read-only cache it stays, skipped for the run, and the warning says so) and its texts
  are encoded again; a damaged cache is never fatal.

A cache that cannot be written (a file in its place, read-only, a full disk) warns once and the run
goes on without storing vectors. ``benchmarks/cache_store.py`` weighs this against SQLite.
Shards of the earlier format (``NNNNNN.npy`` + ``NNNNNN.keys``) are not read (their keys and vectors
could come from two writers): their texts are encoded once more.
"""

from __future__ import annotations

import errno
import hashlib
import os
import time
import uuid
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..core.atomic import STALE_SECONDS, TMP_SUFFIX, atomic_file, sweep_stale
from ..core.errors import EmbenchError
from ..core.paths import unwritable
from ..core.signals import interrupts_held
from ..core.surrogates import surrogate_problem

SUFFIX = ".npz"
_READ_ERRORS = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile)


def text_key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def keyed_texts(texts: Sequence[str]) -> list[tuple[str, str]]:
    """(key, text) of each text; one that UTF-8 cannot hold (a lone surrogate) is an EmbenchError naming its index
    among ``texts``, not a UnicodeEncodeError from the key (readers and ``encode()`` refuse them first, by name)."""
    try:
        return [(text_key(t), t) for t in texts]
    except UnicodeEncodeError:
        i, problem = next((i, p) for i, t in enumerate(texts) if (p := surrogate_problem(t)) is not None)
        raise EmbenchError(f"text {i} of the {len(texts)} to encode ({texts[i][:60]!r}) {problem}") from None


def default_cache_dir() -> Path:
    return Path(os.environ.get("EMBENCH_CACHE") or "~/.cache/embench/embeddings").expanduser()


def shard_checksum(keys: np.ndarray, vectors: np.ndarray, namespace: str) -> np.ndarray:
    """blake2b of the keys, the vectors and the encoder configuration together: binds each key to its row,
    and the shard to its folder (a shard copied in from another configuration does not check out)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(namespace.encode("utf-8"))
    h.update(np.ascontiguousarray(keys).tobytes())
    h.update(np.ascontiguousarray(vectors).tobytes())
    return np.frombuffer(h.digest(), dtype=np.uint8)


class DamagedShard(Exception):
    """A shard that is truncated, unreadable or fails its row-count or checksum check."""


def read_shard(path: Path, with_vectors: bool = True) -> tuple[list[str], np.ndarray | None]:
    """Keys (and vectors) of one shard, checked; a DamagedShard when it is not whole."""
    try:
        # the file opened here, not by np.load: a zip it cannot read left its file open (a ResourceWarning per shard)
        with open(path, "rb") as f, np.load(f, allow_pickle=False) as z:
            keys = z["keys"]
            if keys.ndim != 1 or keys.dtype.kind != "S":
                raise DamagedShard("its keys are not a list of hashes")
            if not with_vectors:
                return [k.decode("ascii") for k in keys], None
            vectors, checksum = z["vectors"], z["checksum"]
    except DamagedShard:
        raise
    except _READ_ERRORS as e:
        raise DamagedShard(f"{type(e).__name__}: {e}") from None
    if vectors.ndim != 2 or vectors.shape[0] != keys.shape[0]:
        raise DamagedShard(f"{keys.shape[0]} keys but vectors of shape {vectors.shape}")
    if vectors.dtype != np.float32 or not np.array_equal(checksum, shard_checksum(keys, vectors, path.parent.name)):
        raise DamagedShard("its checksum does not match its content")
    return [k.decode("ascii") for k in keys], vectors


class EmbeddingCache:
    """Text-hash -> vector store for one encoder configuration."""

    def __init__(self, root: Path, namespace: str):
        self.root = Path(root)  # the cache folder, shared by every encoder configuration
        self.folder = self.root / namespace
        self.writable = True  # False after a failed write: the run goes on without storing
        self._index: dict[str, Path] | None = None  # key -> the shard holding it
        self._vectors: dict[Path, dict[str, np.ndarray]] = {}  # shards read so far (checked)
        self._bad: set[Path] = set()  # damaged shards that could not be renamed away

    # -- reading ---------------------------------------------------------------------------------
    def _shard_paths(self) -> list[Path]:
        if not self.folder.is_dir():
            return []
        return sorted(p for p in self.folder.glob(f"*{SUFFIX}") if not p.name.startswith(".") and p not in self._bad)

    def _sweep_stale(self) -> None:
        """Temporary shards a killed writer left (kill -9 inside a flush): a writer renames its shard within
        seconds, so one older than ``STALE_SECONDS`` has no writer left, on this machine or another."""
        sweep_stale(self.folder, f".*{SUFFIX}*{TMP_SUFFIX}", STALE_SECONDS)

    def _load_index(self) -> dict[str, Path]:
        if self._index is None:
            self._sweep_stale()
            self._index = {}
            for path in self._shard_paths():
                try:
                    keys, _ = read_shard(path, with_vectors=False)
                except DamagedShard as e:
                    self._set_aside(path, str(e))
                    continue
                for k in keys:
                    self._index.setdefault(k, path)
        return self._index

    def __len__(self) -> int:
        return len(self._load_index())

    def stored(self, keys: list[str]) -> set[str]:
        """Which of ``keys`` a shard holds (from the shards' key lists: no vector is read)."""
        index = self._load_index()
        return {k for k in keys if k in index}

    def refresh(self) -> None:
        """Forget the key index: shards that other processes wrote since are found on the next read."""
        self._index = None

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        """The stored vectors of ``keys`` (absent keys are left out): only from shards that check out."""
        index = self._load_index()
        out: dict[str, np.ndarray] = {}
        for k in keys:
            path = index.get(k)
            if path is None:
                continue
            if path not in self._vectors:
                try:
                    names, vectors = read_shard(path)
                except DamagedShard as e:
                    # set aside, then look again: another shard may hold the same keys
                    self._set_aside(path, str(e))
                    self._index = None
                    return {**out, **self.get_many([k2 for k2 in keys if k2 not in out])}
                self._vectors[path] = dict(zip(names, vectors, strict=True))
            out[k] = self._vectors[path][k]
        return out

    def _set_aside(self, path: Path, problem: str) -> None:
        """Rename a damaged shard ``*.damaged``; where that fails, skip it for this run. The warning says which."""
        self._bad.add(path)
        try:
            os.replace(path, path.with_name(path.name + ".damaged"))
            done = f"set aside as {path.name}.damaged"
        except FileNotFoundError:  # another reader moved it first
            done = "set aside by another process"
        except OSError as e:  # it stays: every run warns until the cache can be written
            why = "the cache is read-only" if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM) else "it cannot be renamed"
            done = f"it could not be set aside ({why}: {e.strerror or e}), so it is skipped this run"
        warnings.warn(f"embedding cache: damaged shard {path} ({problem}); {done}; its texts are encoded again",
                      stacklevel=4)

    # -- writing ---------------------------------------------------------------------------------
    def check_writable(self) -> bool:
        """Try the folder before any encoding: a cache that cannot be written warns once, then is read-only."""
        if not self.writable:
            return False
        error = unwritable(self.folder)
        if error is not None:
            self._disable(error)
        return self.writable

    def _disable(self, e: OSError) -> None:
        self.writable = False
        warnings.warn(f"embedding cache {self.folder}: cannot write ({e.strerror or e}); "
                      "going on without storing vectors", stacklevel=4)

    def put_many(self, keys: list[str], vectors: np.ndarray) -> None:
        """Store one shard; a failed write warns, leaves nothing behind and turns writing off."""
        if not keys or not self.writable:
            return
        name = f"{time.time_ns():x}-{os.getpid()}-{uuid.uuid4().hex}{SUFFIX}"
        final = self.folder / name
        karr = np.array([k.encode("ascii") for k in keys])
        varr = np.ascontiguousarray(vectors, dtype=np.float32)
        # Ctrl-C or SIGTERM mid-write takes effect once the shard is in place: raised inside, it removed the
        # temporary file, and the vectors a run stops to keep were lost with it
        with interrupts_held():
            try:
                with atomic_file(final, fsync=True) as f:  # the bytes are on disk before the name is
                    np.savez(f, keys=karr, vectors=varr, checksum=shard_checksum(karr, varr, self.folder.name))
            except OSError as e:  # nothing is left behind (atomic_file removes its temporary file)
                self._disable(e)
                return
            if self._index is not None:
                for k in keys:
                    self._index.setdefault(k, final)
