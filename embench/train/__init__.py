"""The trainer: one loop (``Trainer``) for every method in ``methods/``, the papers' recipes.

>>> from embench.train import make_config, train                                       # doctest: +SKIP
>>> result = train(make_config(recipe="simcse-unsup", model="all-MiniLM-L6-v2", max_steps=200,
...                            out="runs/simcse"))                                      # doctest: +SKIP
>>> result.best_dir, result.best_score                                                  # doctest: +SKIP

Heavy imports (torch, transformers) happen inside the modules, which the CLI imports lazily.
"""

from .config import TrainConfig
from .configure import make_config
from .methods import METHODS, Batch, Method, Outputs
from .recipes import RECIPES, Recipe
from .resolve import resolve
from .trainer import Trainer, TrainingDivergedError, TrainResult, train

__all__ = ["METHODS", "RECIPES", "Batch", "Method", "Outputs", "Recipe", "TrainConfig", "TrainResult", "Trainer",
           "TrainingDivergedError", "make_config", "resolve", "train"]
