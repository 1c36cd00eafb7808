"""Stable short hashes of JSON-serialisable objects (record keys, cache namespaces) and of files."""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any


def stable_hash(obj: Any, n: int = 12) -> str:
    """A short hash of a JSON-serialisable object, independent of key order."""
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:n]


@lru_cache(maxsize=4096)
def _sha256(path: str, size: int, mtime_ns: int, ctime_ns: int, inode: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of a file, memoised on (path, size, mtime, ctime, inode) for the life of the process: the change time
    and inode because a rewrite of the same size can set the modification time back (``os.utime``), not the change time."""
    st = path.stat()
    return _sha256(str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
