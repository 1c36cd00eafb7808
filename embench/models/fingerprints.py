"""Fingerprints of weights: what identifies a model in caches and records.

A checkpoint folder is fingerprinted from its config and weight files (their names, sizes and bytes, memoised
on the files' sizes and modification times, so a folder is read once per process); an in-memory model from
its parameters and config.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

import torch


def weights_fingerprint(folder: Path) -> str:
    """sha256 over the config and the full weight files of a checkpoint folder."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and (p.suffix in (".safetensors", ".bin", ".gguf") or p.name == "config.json"))
    return fingerprint_files(stat_files(*files))


def stat_files(*files: Path) -> tuple[tuple[str, int, int], ...]:
    """(path, size, mtime) of each file: the memo key of :func:`fingerprint_files`."""
    return tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files)


@lru_cache(maxsize=64)
def fingerprint_files(files: tuple[tuple[str, int, int], ...]) -> str:
    """sha256 over the files' names, sizes and bytes (the directory is no part of it: a moved copy is the same model)."""
    h = hashlib.sha256()
    for path, size, _ in files:
        h.update(Path(path).name.encode() + str(size).encode())
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 22), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


def module_fingerprint(model: torch.nn.Module) -> str:
    """sha256 over the parameters and config of an in-memory model."""
    h = hashlib.sha256()
    cfg = getattr(model, "config", None)
    if cfg is not None:
        h.update(json.dumps(cfg.to_diff_dict(), sort_keys=True, default=str).encode())
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().float().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]
