"""The on-disk embedding cache.

One folder per encoder configuration (``Encoder.cache_key()``: weights fingerprint, pooling, layer,
maximum length, dtype, normalisation, prompt). Vectors are appended as shards: ``NNNNNN.npy``
(float32 rows) and ``NNNNNN.keys`` (one text hash a line), each written to a temporary name and
renamed, keys last, so a shard is either whole or absent after a crash.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np


def text_key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def default_cache_dir() -> Path:
    return Path(os.environ.get("EMBENCH_CACHE") or "~/.cache/embench/embeddings").expanduser()


class EmbeddingCache:
    """Text-hash -> vector store for one encoder configuration."""

    def __init__(self, root: Path, namespace: str):
        self.folder = Path(root) / namespace
        self._index: dict[str, tuple[int, int]] | None = None  # key -> (shard, row)
        self._shards: dict[int, np.ndarray] = {}

    def _load_index(self) -> dict[str, tuple[int, int]]:
        if self._index is None:
            self._index = {}
            if self.folder.is_dir():
                for keys_file in sorted(self.folder.glob("*.keys")):
                    shard = int(keys_file.stem)
                    keys = keys_file.read_text().split()
                    npy = keys_file.with_suffix(".npy")
                    if not npy.is_file():
                        continue
                    for row, k in enumerate(keys):
                        self._index[k] = (shard, row)
        return self._index

    def __len__(self) -> int:
        return len(self._load_index())

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        index = self._load_index()
        out: dict[str, np.ndarray] = {}
        for k in keys:
            hit = index.get(k)
            if hit is None:
                continue
            shard, row = hit
            if shard not in self._shards:
                self._shards[shard] = np.load(self.folder / f"{shard:06d}.npy", mmap_mode="r")
            out[k] = np.asarray(self._shards[shard][row], dtype=np.float32)
        return out

    def put_many(self, keys: list[str], vectors: np.ndarray) -> None:
        if not keys:
            return
        index = self._load_index()
        self.folder.mkdir(parents=True, exist_ok=True)
        existing = [int(p.stem) for p in self.folder.glob("*.keys")]
        shard = max(existing, default=-1) + 1
        base = self.folder / f"{shard:06d}"
        tmp_npy = base.with_suffix(f".npy.tmp{os.getpid()}")
        with open(tmp_npy, "wb") as f:
            np.save(f, np.ascontiguousarray(vectors, dtype=np.float32))
        os.replace(tmp_npy, base.with_suffix(".npy"))
        tmp_keys = base.with_suffix(f".keys.tmp{os.getpid()}")
        tmp_keys.write_text("\n".join(keys) + "\n")
        os.replace(tmp_keys, base.with_suffix(".keys"))
        for row, k in enumerate(keys):
            index[k] = (shard, row)
