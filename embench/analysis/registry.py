"""The registry of analyses behind ``embench analyze NAME``: lazy ``"module:function"`` entries, so
naming and listing an analysis imports none of their heavy libraries.

>>> from embench.analysis import run                                           # doctest: +SKIP
>>> run("spectrum", ["all-MiniLM-L6-v2", "path/to/random-bert"], "out/")        # doctest: +SKIP
"""

from __future__ import annotations

import inspect
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
    ("layer-removal", "layer_removal:layer_removal"),
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


def run_many(names: list[str], models, out, options: dict[str, dict[str, Any]] | None = None, *,
             labels: list[str] | None = None, data=None, cache_dir=None, use_cache: bool = True, batch_size: int = 64,
             progress: bool = False, **model_options: Any) -> dict[str, Any]:
    """Run several analyses on the same models into ``out``: the models are loaded once, vectors come
    through one engine per model, and the per-token analyses (``attention``, ``cls-energy``,
    ``token-dependency``) share ONE forward pass per batch over the union of their texts.

    >>> run_many(["attention", "cls-energy"], ["all-MiniLM-L6-v2"], "out/")   # doctest: +SKIP
    """
    from .base import check_options, finish, start
    from .inputs import make_context, model_refs
    from .token_pass import run_together

    options = options or {}
    fns = {n: get(n) for n in names}
    for n, fn in fns.items():
        check_options(n, fn.options, options.get(n, {}))
    refs = model_refs(models, labels, **model_options)
    ctx = make_context(data, cache_dir, use_cache, batch_size, progress)
    started = {n: start(fn, refs, ctx, out, options.get(n, {})) for n, fn in fns.items()}
    token = [n for n, s in started.items() if inspect.isgenerator(s)]
    results = dict(zip(token, run_together([started[n] for n in token]), strict=True))
    return {n: results[n] if n in results else finish(started[n]) for n in names}
