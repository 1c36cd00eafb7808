"""Analyses of embedding models: geometry, kNN, layers, attention, t-SNE, token dependency.

Each analysis is a module with one job; :func:`run` dispatches by name (``embench analyze NAME``).
Heavy libraries are imported inside functions, so importing this package is cheap.
"""
