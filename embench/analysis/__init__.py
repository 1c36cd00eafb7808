"""Analyses of embedding models: geometry, kNN, layers, attention, t-SNE, token dependency.

Each analysis is a module with one job, registered lazily by name in :mod:`embench.analysis.registry`;
:func:`run` dispatches by name (``embench analyze NAME``). Importing this package imports no analysis.

>>> from embench.analysis import run                                         # doctest: +SKIP
>>> run("spectrum", ["all-MiniLM-L6-v2", "random-bert/"], "out/spectrum")     # doctest: +SKIP
"""

from .registry import ANALYSES, run

__all__ = ["ANALYSES", "run"]
