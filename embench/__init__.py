"""embench: benchmark and analyse sentence embeddings under every evaluation protocol.

The public names and the subpackages are imported on first use (PEP 562), so ``import embench`` and every ``embench --help``
start without torch, pandas or scipy; ``embench.evaluate`` and the rest are there when asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .core.lazy import lazy_exports
from .core.version import __version__

_PUBLIC = {
    "Comparison": "embench.api",
    "Evaluation": "embench.api",
    "compare": "embench.api",
    "evaluate": "embench.api",
    "results": "embench.tasks.stored_results",  # not embench.api: listing records imports no torch
    "report_tables": "embench.tasks.report_tables",
    "EvalProtocol": "embench.evaluation.protocols",
    "load_model": "embench.models.loader",
    "generate_triplets": "embench.generate",
    "curate_triplets": "embench.generate",
}
# the subpackages the README reaches from ``import embench`` alone (embench.analysis.run, embench.stats, ...)
_SUBPACKAGES = ("analysis", "audit", "data", "encoding", "evaluation", "generate", "grid", "models", "report", "stats",
                "tasks", "train")
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC, _SUBPACKAGES)
__all__ = ["Comparison", "EvalProtocol", "Evaluation", "__version__", "compare", "curate_triplets", "evaluate",
           "generate_triplets", "load_model", "report_tables", "results"]

if TYPE_CHECKING:  # what type checkers and IDEs see
    from .api import Comparison, Evaluation, compare, evaluate
    from .evaluation.protocols import EvalProtocol
    from .generate import curate_triplets, generate_triplets
    from .models.loader import load_model
    from .tasks.report_tables import report_tables
    from .tasks.stored_results import results
