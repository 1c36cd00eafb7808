"""embench: benchmark and analyse sentence embeddings under every evaluation protocol."""

from .api import Evaluation, evaluate, results  # noqa: E402
from .core.version import __version__
from .evaluation.protocols import EvalProtocol  # noqa: E402
from .models.loader import load_model  # noqa: E402

__all__ = ["EvalProtocol", "Evaluation", "__version__", "evaluate", "load_model", "results"]
