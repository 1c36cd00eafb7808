"""embench's own model folder: checkpoints no package carries, fetched once and then found by name offline.

``../shared/tools/get-mpnet.sh`` (and anyone by hand) leaves ``<folder>/all-mpnet-base-v2``; with it there,
``-m all-mpnet-base-v2`` loads without a hub. The folder is ``$EMBENCH_MODELS``, else
``~/.cache/embench/models`` (the script's default destination). A name is looked up as its own
sub-folder; a hub id ``org/name`` as ``<folder>/org/name``, then ``<folder>/name`` (how a fetched copy of
``sentence-transformers/all-mpnet-base-v2`` is usually called).
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "EMBENCH_MODELS"
DEFAULT = "~/.cache/embench/models"


def models_folder() -> Path:
    """``$EMBENCH_MODELS``, else ``~/.cache/embench/models``."""
    return Path(os.environ.get(ENV) or DEFAULT).expanduser()


def candidates(name: str) -> list[Path]:
    """Where ``name`` may sit in the model folder; none for a path (``./x``, ``/x``, ``~/x``, ``a/b/c``)."""
    if not name or name.startswith((".", "/", "~", "\\")) or name.count("/") > 1 or "\\" in name:
        return []
    root = models_folder()
    out = [root / name]
    if "/" in name:  # a hub id: its copy is often kept under the model's own name
        out.append(root / name.split("/", 1)[1])
    return out


def find_local_model(name: str, tried: list[str]) -> Path | None:
    """The model folder's copy of ``name``, or None with where it looked appended to ``tried``."""
    places = candidates(name)
    for p in places:
        if (p / "config.json").is_file() or (p / "modules.json").is_file():
            return p.resolve()
    if places:
        where = "; ".join(f"{str(p)!r} " + ("holds no config.json or modules.json" if p.is_dir() else "does not exist")
                          for p in places)
        tried.append(f"embench's model folder (${ENV}, default {DEFAULT}): {where}")
    return None
