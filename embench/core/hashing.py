"""Stable short hashes of JSON-serialisable objects (record keys, cache namespaces)."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def stable_hash(obj: Any, n: int = 12) -> str:
    """A short hash of a JSON-serialisable object, independent of key order."""
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:n]
