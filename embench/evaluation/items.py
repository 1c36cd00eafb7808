"""The per-item outcomes behind a score, kept beside its record so intervals and paired tests cost no encoding.

An STS task keeps, per subset, the similarity of every pair and its gold score; a transfer task keeps
whether each test example was classified correctly. ``digest`` identifies the items themselves (the
texts and the gold scores or labels, in order): two records are compared pair by pair only when their
digests are equal. Stored as ``<record>.items.npz`` beside the record's JSON (arrays only, read with
``allow_pickle=False``), with its sha256 in the record.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from ..core.atomic import write_bytes
from ..stats import Scored

KINDS = ("correlation", "accuracy")


@dataclass
class Items:
    """Outcomes per item, in groups (STS subsets; one group ``test`` or ``all`` for transfer tasks)."""

    kind: str  # "correlation": values are similarities, with gold | "accuracy": values are 0/1 correctness
    groups: list[str]
    values: list[np.ndarray]
    gold: list[np.ndarray] | None
    digest: str

    @property
    def n(self) -> int:
        return int(sum(len(v) for v in self.values))

    def scored(self) -> Scored:
        return Scored(self.values, self.gold)

    def describe(self) -> dict:
        return {"kind": self.kind, "groups": self.groups, "n": self.n, "digest": self.digest}

    def save(self, path: Path) -> str:
        """Write atomically; returns the sha256 of the bytes written. It is taken from those bytes, not read back
        from ``path``: another process writing the same record (a grid) may have replaced the file by then, and
        its checksum would pair this record with the other's items."""
        arrays = {f"values{i}": v for i, v in enumerate(self.values)}
        if self.gold is not None:
            arrays.update({f"gold{i}": g for i, g in enumerate(self.gold)})
        arrays["groups"] = np.array(self.groups, dtype=str)
        arrays["meta"] = np.array([self.kind, self.digest], dtype=str)
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        data = buffer.getvalue()
        write_bytes(path, data)
        return hashlib.sha256(data).hexdigest()

    @classmethod
    def load(cls, path: Path | IO[bytes]) -> Items:
        with np.load(path, allow_pickle=False) as z:
            groups = [str(g) for g in z["groups"]]
            kind, digest = (str(x) for x in z["meta"])
            values = [z[f"values{i}"] for i in range(len(groups))]
            gold = [z[f"gold{i}"] for i in range(len(groups))] if "gold0" in z.files else None
        return cls(kind=kind, groups=groups, values=values, gold=gold, digest=digest)


def items_digest(texts: Iterable[str], targets: Iterable[np.ndarray]) -> str:
    """A hash of the items in order: their texts and their gold scores or labels."""
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")
    for a in targets:
        h.update(np.ascontiguousarray(np.asarray(a, dtype=np.float64)).tobytes())
    return h.hexdigest()[:16]
