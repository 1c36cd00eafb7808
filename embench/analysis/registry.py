"""The registry of analyses behind ``embench analyze NAME``: lazy ``"module:function"`` entries, so
naming and listing an analysis imports none of their heavy libraries.

>>> from embench.analysis import run                                           # doctest: +SKIP
>>> run("spectrum", ["all-MiniLM-L6-v2", "path/to/random-bert"], "out/")        # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from ..core.registry import Registry

# name -> "module:function" of the decorated analysis (its docstring is its description)
ANALYSES: Registry = Registry("analysis")
for _name, _path in (
    ("alignment-uniformity", "geometry:alignment_uniformity"),
    ("spectrum", "geometry:spectrum"),
    ("cosine-density", "cosine_density:cosine_density"),
    ("knn", "knn:knn"),
    ("layers", "layers:layers"),
    ("attention", "attention:attention"),
    ("cls-energy", "attention:cls_energy"),
    ("tsne", "tsne:tsne"),
    ("token-dependency", "token_dependency:token_dependency"),
):
    ANALYSES.add(_name, f"embench.analysis.{_path}")


def get(name: str):
    """The public function of analysis ``name`` (did-you-mean on a typo)."""
    return ANALYSES.get(name)


def run(name: str, models, out, **options: Any):
    """Run analysis ``name`` on ``models`` and write its tables and figures into ``out``."""
    return get(name)(models, out, **options)
