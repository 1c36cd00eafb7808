"""Result records with provenance, and the results store.

One JSON file per (model configuration, task, protocol), written atomically (temporary file, then
rename). The file name carries a hash of everything that identifies the result, so results under
different protocols never overwrite each other, and a re-run finds the records it already has.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..core.hashing import stable_hash
from .items import Items, file_sha256

log = logging.getLogger(__name__)


@dataclass
class Record:
    """One task's result for one model configuration under one protocol."""

    task: str
    display: str
    kind: str
    model: str
    main_score: float
    scores: dict[str, Any]
    protocol: dict[str, Any]
    encoder: dict[str, Any]
    provenance: dict[str, Any] = field(default_factory=dict)
    key: str = ""
    items: dict[str, Any] = field(default_factory=dict)  # the items file beside it: kind, n, digest, sha256
    ci: dict[str, Any] = field(default_factory=dict)  # the latest interval: level, resamples, seed, low, high

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Record:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


IDENTITY_ENCODER_FIELDS = ("fingerprint", "pooling", "layer", "max_length", "dtype", "normalize", "lowercase", "prompt")


def record_key(task: str, encoder: dict[str, Any], protocol: dict[str, Any]) -> str:
    """Identity of a result: the task, the encoder configuration and the protocol."""
    ident = {k: encoder.get(k) for k in IDENTITY_ENCODER_FIELDS}
    return stable_hash({"task": task, "encoder": ident, "protocol": protocol}, 16)


def slug(name: str) -> str:
    base = name.rstrip("/").replace("\\", "/")
    if "/" in base and Path(base).expanduser().exists():
        base = Path(base).name
    return re.sub(r"[^A-Za-z0-9._-]+", "__", base).strip("_") or "model"


def default_results_dir() -> Path:
    return Path(os.environ.get("EMBENCH_RESULTS") or "results")


class ResultStore:
    """A folder of result records: ``<root>/<model>/<task>-<key>.json``."""

    def __init__(self, root: Path | str | None = None):
        self.root = Path(root) if root is not None else default_results_dir()

    def path(self, record_or_model: Record | str, task: str | None = None, key: str | None = None) -> Path:
        if isinstance(record_or_model, Record):
            r = record_or_model
            return self.root / slug(r.model) / f"{r.task}-{r.key}.json"
        return self.root / slug(record_or_model) / f"{task}-{key}.json"

    def find(self, model: str, task: str, key: str) -> Record | None:
        p = self.path(model, task, key)
        if not p.is_file():
            return None
        try:
            return Record.from_dict(json.loads(p.read_text()))
        except (json.JSONDecodeError, TypeError, KeyError):
            return None  # a damaged file is redone, not trusted

    def items_path(self, record: Record) -> Path:
        return self.path(record).with_suffix(".items.npz")

    def save(self, record: Record, items: Items | None = None) -> Path:
        """Write the record (and its per-item outcomes first, so a record never names a missing file)."""
        p = self.path(record)
        p.parent.mkdir(parents=True, exist_ok=True)
        if items is not None:
            record.items = {**items.describe(), "file": self.items_path(record).name, "sha256": items.save(self.items_path(record))}
        tmp = p.with_suffix(f".json.tmp{os.getpid()}")
        tmp.write_text(json.dumps(record.to_dict(), indent=2, sort_keys=False, default=_json_default) + "\n")
        os.replace(tmp, p)
        return p

    def load_items(self, record: Record) -> Items | None:
        """The record's per-item outcomes, or None when it has none or the file is missing or damaged."""
        if not record.items:
            return None
        path = self.items_path(record)
        try:
            if file_sha256(path) != record.items.get("sha256"):
                log.warning("%s does not match the checksum in its record; the task will be scored again", path)
                return None
            return Items.load(path)
        except (OSError, ValueError, KeyError) as exc:
            log.warning("%s cannot be read (%s); the task will be scored again", path, exc)
            return None

    def records(self, model: str | None = None, task: str | None = None) -> list[Record]:
        """Every stored record, optionally filtered by model name (substring) and task."""
        out = []
        if not self.root.is_dir():
            return out
        for p in sorted(self.root.glob("*/*.json")):
            try:
                r = Record.from_dict(json.loads(p.read_text()))
            except (json.JSONDecodeError, TypeError, KeyError, UnicodeDecodeError):
                continue
            if model and model.lower() not in r.model.lower():
                continue
            if task and task.lower() != r.task.lower():
                continue
            out.append(r)
        return out


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
