"""What every analysis shares: its result type, and the decorator that gives it a public signature.

An analysis module defines ``impl(refs, ctx, out, **options) -> AnalysisResult``; ``@analysis(name)``
turns it into ``fn(models, out, *, labels, data, ..., **options)`` taking model names, which loads
the models, the data root and the embedding cache and checks the options, and once the analysis has finished
writes its provenance beside its outputs (:mod:`embench.analysis.provenance`). The registry
(:mod:`embench.analysis.registry`) names the decorated functions.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.directions import check_direction
from ..core.errors import EmbenchError
from ..core.paths import check_folder_option
from ..models.devices import several_devices
from .inputs import make_context, model_refs
from .labelled import check_set_names
from .option_values import check_values


@dataclass
class AnalysisResult:
    """The numbers an analysis computed (one frame per table) and every file it wrote."""

    name: str
    tables: dict[str, Any] = field(default_factory=dict)  # stem -> pandas DataFrame
    files: list[Path] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)


def analysis(name: str, scores: dict[str, str] | None = None):
    """Give ``impl(refs, ctx, out, **options)`` the public signature of analysis ``name``.

    An ``impl`` that reads per-token states is a generator (:mod:`embench.analysis.token_pass`): it yields
    its requests, the pass runs, and it returns its result; :func:`run_many` shares one pass between several.

    ``scores``: the columns of its tables (or keys of its summary) that a training run may log and select a
    checkpoint on, each with the way it improves (``"higher"`` or ``"lower"``); the first is its main score.
    """
    declared = {column: check_direction(d, f"analysis {name!r}, score {column!r}") for column, d in (scores or {}).items()}

    def deco(impl: Callable[..., AnalysisResult]) -> Callable[..., AnalysisResult]:
        params = {n: p.default for n, p in inspect.signature(impl).parameters.items() if n not in ("refs", "ctx", "out")}

        @functools.wraps(impl)
        def public(models, out, *, labels: list[str] | None = None, data=None, cache_dir=None, use_cache: bool = True,
                   batch_size: int | None = None, progress: bool = False, pooling: str | None = None,
                   max_length: int | None = None, device: str | None = None, dtype: str = "fp32",
                   normalize: bool | None = None, prompt: str | None = None, bidirectional_last: int | None = None,
                   bidirectional_mode: str | None = None,
                   adapter: str | None = None, batch_tokens: int | None = None, compile: bool | None = None,
                   cuda_graphs: bool | None = None, unpadded: bool | None = None, revision: str | None = None, prompt_name: str | None = None, **options: Any) -> AnalysisResult:
            check_options(name, params, options)
            check_folder_option(out, "out")  # a file there: one message now, not pathlib's error once models loaded
            devices = several_devices(device)  # cuda:0,cuda:1 or all: vectors from one process per device
            refs = model_refs(models, labels, pooling=pooling, max_length=max_length,
                              device=devices[0] if devices else device, dtype=dtype,
                              normalize=normalize, prompt=prompt, bidirectional_last=bidirectional_last,
                              bidirectional_mode=bidirectional_mode, adapter=adapter,
                              batch_tokens=batch_tokens, compile=compile, cuda_graphs=cuda_graphs, unpadded=unpadded,
                              revision=revision,
                              prompt_name=prompt_name)
            ctx = make_context(data, cache_dir, use_cache, batch_size, progress, devices)
            return record(public, finish(start(public, refs, ctx, out, options)), refs, ctx, out, options)

        public.options = params  # type: ignore[attr-defined]  # option -> default (the CLI coerces by it)
        public.scores = declared  # type: ignore[attr-defined]  # column -> "higher" | "lower" (train/callbacks.py)
        public.impl = impl  # type: ignore[attr-defined]
        public.analysis_name = name  # type: ignore[attr-defined]
        return public

    return deco


def check_options(name: str, known: dict[str, Any], options: dict[str, Any]) -> None:
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise EmbenchError(f"analysis {name!r} has no option(s) {unknown}; its options are: {', '.join(known)}")
    check_values(name, known, options)
    check_set_names(options)


def own_options(public: Callable[..., AnalysisResult], ctx, options: dict[str, Any]) -> dict[str, Any]:
    """The options the analysis runs with, as given (its defaults fill the rest)."""
    if "batch_size" in public.options and "batch_size" not in options and ctx.batch_size is not None:  # type: ignore[attr-defined]
        # the shared batch size is also the analysis' own (its per-token pass): the public keyword takes both
        options = {**options, "batch_size": ctx.batch_size}
    return options


def start(public: Callable[..., AnalysisResult], refs, ctx, out, options: dict[str, Any]):
    """Begin an analysis: its result, or (for a per-token analysis) its generator, waiting for the pass."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    return public.impl(refs, ctx, out, **own_options(public, ctx, options))  # type: ignore[attr-defined]


def record(public: Callable[..., AnalysisResult], result: AnalysisResult, refs, ctx, out, options: dict[str, Any]) -> AnalysisResult:
    """A finished analysis' provenance beside its outputs, the files its previous run left there removed
    (:mod:`embench.analysis.provenance`)."""
    from .provenance import write_provenance

    resolved = {**public.options, **own_options(public, ctx, options)}  # type: ignore[attr-defined]
    return write_provenance(public.analysis_name, result, refs, ctx, out, resolved)  # type: ignore[attr-defined]


def finish(started) -> AnalysisResult:
    if inspect.isgenerator(started):
        from .token_pass import drive

        return drive(started)
    return started
