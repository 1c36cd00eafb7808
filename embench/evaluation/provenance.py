"""Where a result came from: versions, git commit, data checksums, machine."""

from __future__ import annotations

import platform
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from ..core.version import __version__
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
    return {root.relative(f): file_sha256(f) for f in files}
