"""Where a result came from: versions, git commit, data checksums, machine."""

from __future__ import annotations

import datetime as _dt
import platform
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from ..core.version import __version__
from ..data.manifest import content_sha256
from ..data.root import DataRoot, file_sha256


def _version(pkg: str) -> str | None:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


@lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The commit of the embench source tree, with ``-dirty`` when it has uncommitted changes."""
    here = Path(__file__).resolve().parent.parent  # the embench package, not only this folder
    try:
        commit = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--", "."], capture_output=True, text=True, timeout=5
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("-dirty" if dirty else "") if commit else None


@lru_cache(maxsize=1)
def software() -> dict[str, str | None]:
    return {
        "embench": __version__,
        "embench_commit": git_commit(),
        "python": platform.python_version(),
        **{p: _version(p) for p in ("torch", "transformers", "sentence-transformers", "numpy", "scipy", "mteb")},
    }


def data_checksums(root: DataRoot, files: list[Path]) -> dict[str, str]:
    """Each data file's sha256, a ``.gz`` file's of its decompressed content (as the manifest and ``data check`` hash
    it): one file gzipped by another tool or level (a mirror's download) is the same data, and its record reused."""
    return {root.relative(f): content_sha256(f) if f.suffix == ".gz" else file_sha256(f) for f in files}


def record_provenance(enc_desc: dict[str, Any], root: DataRoot, prepared: Any, outcome: Any, protocol: Any,
                      engine: Any, seconds: tuple[float, float], counts: dict[str, int]) -> dict[str, Any]:
    """Where a record came from: software, model, data files and their checksums, settings, time."""
    return {
        **software(),
        "model_source": enc_desc.get("source"),
        "model_revision": enc_desc.get("revision"),
        "model_fingerprint": enc_desc.get("fingerprint"),
        "embedding_dim": engine.dim,  # the vectors' length (an mteb export's embed_dim)
        "data_root": str(root.path),
        "data_files": data_checksums(root, prepared.files),
        "task_meta": {**prepared.meta, **outcome.meta},
        "batch_size": engine.batch_size,  # texts per batch at most (None: the token budget alone)
        "batch_tokens": engine.batch_tokens,  # padded tokens per batch at most (None: no budget)
        "cuda_graphs": getattr(engine.encoder, "graphs", None) is not None,  # forwards replayed as CUDA graphs (same vectors)
        "unpadded": bool(getattr(engine.encoder, "unpadded", False)),  # batches as one row of real tokens (unpadded_batch.py)
        "dtype": enc_desc.get("dtype"),
        "device": enc_desc.get("device"),
        "seed": protocol.seed,
        "wall_seconds": round(sum(seconds), 3),
        "encode_seconds": round(seconds[0], 3),  # this task's share of the one encoding pass (by texts it brought)
        "score_seconds": round(seconds[1], 3),
        "texts_encoded": counts["encoded"],
        "texts_from_cache": counts["from_cache"],
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
