"""The registry of analyses and the dispatcher behind ``embench analyze NAME``.

Each analysis module defines ``impl(refs, ctx, out, **options) -> AnalysisResult`` and registers it
with :func:`analysis`, which also gives it a public signature taking model names:

>>> from embench.analysis import run                                           # doctest: +SKIP
>>> run("spectrum", ["all-MiniLM-L6-v2", "path/to/random-bert"], "out/")        # doctest: +SKIP
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import EmbenchError
from ..core.registry import Registry
from .inputs import make_context, model_refs

# analysis name -> module that registers it (imported on first use: heavy libraries stay lazy)
MODULES = {
    "alignment-uniformity": "geometry",
    "spectrum": "geometry",
    "cosine-density": "cosine_density",
    "knn": "knn",
    "layers": "layers",
    "attention": "attention",
    "cls-energy": "attention",
    "tsne": "tsne",
    "token-dependency": "token_dependency",
}
ANALYSES: Registry[Callable[..., AnalysisResult]] = Registry("analysis")
for _name in MODULES:
    ANALYSES.add(_name, None)  # placeholder until the module is imported; keeps did-you-mean working


@dataclass
class AnalysisResult:
    """The numbers an analysis computed (one frame per table) and every file it wrote."""

    name: str
    tables: dict[str, Any] = field(default_factory=dict)  # stem -> pandas DataFrame
    files: list[Path] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)


def analysis(name: str):
    """Register ``impl(refs, ctx, out, **options)`` as analysis ``name``; returns the public function."""

    def deco(impl: Callable[..., AnalysisResult]) -> Callable[..., AnalysisResult]:
        params = {n: p.default for n, p in inspect.signature(impl).parameters.items() if n not in ("refs", "ctx", "out")}
        option_names = list(params)

        @functools.wraps(impl)
        def public(models, out, *, labels: list[str] | None = None, data=None, cache_dir=None, use_cache: bool = True,
                   batch_size: int = 64, progress: bool = False, pooling: str | None = None,
                   max_length: int | None = None, device: str | None = None, dtype: str = "fp32",
                   normalize: bool | None = None, **options: Any) -> AnalysisResult:
            unknown = sorted(set(options) - set(option_names))
            if unknown:
                raise EmbenchError(f"analysis {name!r} has no option(s) {unknown}; its options are: {', '.join(option_names)}")
            refs = model_refs(models, labels, pooling=pooling, max_length=max_length, device=device, dtype=dtype,
                              normalize=normalize)
            ctx = make_context(data, cache_dir, use_cache, batch_size, progress)
            out = Path(out)
            out.mkdir(parents=True, exist_ok=True)
            return impl(refs, ctx, out, **options)

        public.options = params  # type: ignore[attr-defined]  # option -> default (the CLI coerces by it)
        ANALYSES._items[ANALYSES.canonical(name)] = public
        return public

    return deco


def get(name: str) -> Callable[..., AnalysisResult]:
    """The public function of analysis ``name`` (did-you-mean on a typo)."""
    canonical = ANALYSES.canonical(name)
    importlib.import_module(f"{__package__}.{MODULES[canonical]}")
    return ANALYSES.get(canonical)


def run(name: str, models, out, **options: Any) -> AnalysisResult:
    """Run analysis ``name`` on ``models`` and write its tables and figures into ``out``."""
    return get(name)(models, out, **options)


def names() -> list[str]:
    return ANALYSES.names()
