"""The trainer: SimCSE (unsupervised, supervised), crop augmentation and its dropout baseline.

>>> from embench.train import make_config, train                                  # doctest: +SKIP
>>> result = train(make_config(method="unsup-simcse", model="all-MiniLM-L6-v2",
...                            data=["corpora"], max_steps=200, out="runs/simcse"))  # doctest: +SKIP
>>> result.best_dir, result.best_score                                             # doctest: +SKIP

Heavy imports (torch, transformers) happen inside the modules, which the CLI imports lazily.
"""

from .config import TrainConfig, make_config
from .loop import TrainingDivergedError, TrainResult, train
from .methods import METHODS

__all__ = ["METHODS", "TrainConfig", "TrainResult", "TrainingDivergedError", "make_config", "train"]
