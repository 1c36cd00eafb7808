"""embench: benchmark and analyse sentence embeddings under every evaluation protocol."""

from .api import Comparison, Evaluation, compare, evaluate, results
from .core.version import __version__
from .evaluation.protocols import EvalProtocol
from .models.loader import load_model

__all__ = ["Comparison", "EvalProtocol", "Evaluation", "__version__", "compare", "evaluate", "load_model", "results"]
