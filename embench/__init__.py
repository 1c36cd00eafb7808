"""embench: benchmark and analyse sentence embeddings under every evaluation protocol."""

__version__ = "0.1.0"

from .api import Evaluation, evaluate, results  # noqa: E402
from .models.loader import load_model  # noqa: E402
from .protocols import Protocol  # noqa: E402

__all__ = ["Evaluation", "Protocol", "__version__", "evaluate", "load_model", "results"]
