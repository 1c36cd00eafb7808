"""Analyses of embedding models: geometry, kNN, layers, attention, t-SNE, token dependency.

Each analysis is a module with one job; :func:`run` dispatches by name (``embench analyze NAME``).
Heavy libraries are imported inside functions, so importing this package is cheap.

>>> from embench.analysis import run                                         # doctest: +SKIP
>>> run("spectrum", ["all-MiniLM-L6-v2", "random-bert/"], "out/spectrum")     # doctest: +SKIP
"""

from .registry import ANALYSES, AnalysisResult, get, names, run

__all__ = ["ANALYSES", "AnalysisResult", "get", "names", "run"]
