"""The trainer: one loop (``Trainer``) for every method in ``methods/``, the papers' recipes.

>>> from embench.train import make_config, train                                       # doctest: +SKIP
>>> result = train(make_config(recipe="simcse-unsup", model="all-MiniLM-L6-v2", max_steps=200,
...                            out="runs/simcse"))                                      # doctest: +SKIP
>>> result.best_dir, result.best_score                                                  # doctest: +SKIP

Heavy imports (torch, transformers) happen inside the modules, imported on first use of a name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy import lazy_exports

_EXPORTS = {"TrainConfig": ".config", "make_config": ".configure", "METHODS": ".methods", "Batch": ".methods.base",
            "Method": ".methods.base", "Outputs": ".methods.base", "RECIPES": ".recipes", "Recipe": ".recipes",
            "resolve": ".resolution", "Trainer": ".trainer", "TrainingDivergedError": ".divergence", "TrainResult": ".trainer",
            "train": ".trainer"}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)  # listing methods or recipes imports no torch
__all__ = ["METHODS", "RECIPES", "Batch", "Method", "Outputs", "Recipe", "TrainConfig", "TrainResult", "Trainer",
           "TrainingDivergedError", "make_config", "resolve", "train"]

if TYPE_CHECKING:  # what type checkers and IDEs see
    from .config import TrainConfig
    from .configure import make_config
    from .divergence import TrainingDivergedError
    from .methods import METHODS
    from .methods.base import Batch, Method, Outputs
    from .recipes import RECIPES, Recipe
    from .resolution import resolve
    from .trainer import Trainer, TrainResult, train
