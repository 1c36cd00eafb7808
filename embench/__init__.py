"""embench: benchmark and analyse sentence embeddings under every evaluation protocol.

The public names are imported on first use (PEP 562), so ``import embench`` and every ``embench --help``
start without torch, pandas or scipy; ``embench.evaluate`` and the rest are there when asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .core.version import __version__

_PUBLIC = {
    "Comparison": "embench.api",
    "Evaluation": "embench.api",
    "compare": "embench.api",
    "evaluate": "embench.api",
    "results": "embench.api",
    "report_tables": "embench.evaluation.scan",
    "EvalProtocol": "embench.evaluation.protocols",
    "load_model": "embench.models.loader",
}
__all__ = ["Comparison", "EvalProtocol", "Evaluation", "__version__", "compare", "evaluate", "load_model", "report_tables", "results"]

if TYPE_CHECKING:  # what type checkers and IDEs see
    from .api import Comparison, Evaluation, compare, evaluate, results
    from .evaluation.scan import report_tables
    from .evaluation.protocols import EvalProtocol
    from .models.loader import load_model


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module 'embench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
