"""embench: benchmark and analyse sentence embeddings under every evaluation protocol."""

from .api import Evaluation, evaluate, results
from .core.version import __version__
from .evaluation.protocols import EvalProtocol
from .models.loader import load_model

__all__ = ["EvalProtocol", "Evaluation", "__version__", "evaluate", "load_model", "results"]
