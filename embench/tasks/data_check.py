"""``embench data check``: every registered task's files in the data root, with rows and checksums."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..data.manifest import check_files, manifest_sums
from ..data.root import DataRoot
from . import TASKS

KIND_ORDER = {"sts": 0, "transfer": 1, "mteb": 2}


def check(root: DataRoot, manifest: str | Path | None = None) -> list[dict[str, Any]]:
    """One row per registered task: files present, rows, checksum status against the manifest."""
    sums = manifest_sums(manifest)
    # stable: registration order within a kind
    ordered = sorted(TASKS.items(), key=lambda kv: KIND_ORDER.get(kv[1].kind, len(KIND_ORDER)))
    return [{"task": name, "kind": task.kind, **check_files(root, task.data_files(root), sums, name)} for name, task in ordered]
