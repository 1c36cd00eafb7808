"""The registry of analyses behind ``embench analyze NAME``: lazy ``"module:function"`` entries, so
naming and listing an analysis imports none of their heavy libraries.

>>> from embench.analysis import run                                           # doctest: +SKIP
>>> run("spectrum", ["all-MiniLM-L6-v2", "path/to/random-bert"], "out/")        # doctest: +SKIP
"""

from __future__ import annotations

import inspect
from typing import Any

from ..core.boundary import python_api
from ..core.plugins import function_with
from ..core.registry import Registry

# name -> "module:function" of the analysis, and its one-line description (given here, so that listing the
# analyses imports none of them)
ANALYSES: Registry = Registry("analysis", plugins="embench.analyses", expects=function_with(
    ("impl", "options"), "a function made by @embench.analysis.base.analysis(NAME)"))
for _name, _path, _what in (
    ("alignment-uniformity", "geometry:alignment_uniformity",
     "SimCSE Figure 2/3: models (checkpoint series as trajectories) in the (uniformity, alignment) plane"),
    ("spectrum", "geometry:spectrum", "SimCSE Figure F.1: normalised singular values of STS-B embeddings, anisotropy, effective rank"),
    ("cosine-density", "cosine_density:cosine_density", "SimCSE Figure G.1: cosine densities per gold-score group, one panel per model"),
    ("knn", "knn:knn", "cropping paper Table 2/S3: kNN accuracy on labelled sets (raw/centred/whitened, Euclidean/cosine)"),
    ("layers", "layers:layers", "per hidden layer: STS-B Spearman, kNN accuracy and optionally a suite average (one forward pass)"),
    ("layer-removal", "layer_removal:layer_removal",
     "BeLLM Figure 4: STS (or a suite) against the number of layers kept, the final norm applied to the truncated stack"),
    ("attention", "attention:attention", "JTCSE: per-layer attention maps of sentences and attention-sink shares over STS-B"),
    ("cls-energy", "attention:cls_energy", "JTCSE Eq. 6 per layer: the CLS row's norm over the other rows' Frobenius norm in the context tensor"),
    ("tsne", "tsne:tsne", "cropping paper: t-SNE maps, datasets as rows and models side by side"),
    ("token-dependency", "token_dependency:token_dependency",
     "BeLLM Figure 2/5: distribution of pivot-to-token Spearman correlation over sentences"),
    ("in-batch-similarity", "in_batch_similarity:in_batch_similarity",
     "MultiCSR Figure 8: a frozen encoder's cosines of in-batch negatives of training triplets, sigma marked"),
):
    ANALYSES.add(_name, f"embench.analysis.{_path}", description=_what)


def get(name: str):
    """The public function of analysis ``name`` (did-you-mean on a typo)."""
    return ANALYSES.get(name)


@python_api("analysis")  # its errors say layers=, heads=, not the command line's --layers, --heads
def run(name: str, models, out, **options: Any):
    """Run analysis ``name`` on ``models`` and write its tables and figures into ``out``."""
    return get(name)(models, out, **options)


@python_api("analysis")
def run_many(names: list[str], models, out, options: dict[str, dict[str, Any]] | None = None, *,
             labels: list[str] | None = None, data=None, cache_dir=None, use_cache: bool = True, batch_size: int | None = None,
             progress: bool = False, **model_options: Any) -> dict[str, Any]:
    """Run several analyses on the same models into ``out``: the models are loaded once, vectors come
    through one engine per model, and the per-token analyses (``attention``, ``cls-energy``,
    ``token-dependency``) share ONE forward pass per batch over the union of their texts.

    >>> run_many(["attention", "cls-energy"], ["all-MiniLM-L6-v2"], "out/")   # doctest: +SKIP
    """
    from ..core.arguments import name_list
    from ..core.errors import EmbenchError
    from ..core.paths import check_folder_option
    from ..models.devices import several_devices
    from .base import check_options, finish, record, start
    from .inputs import MODEL_OPTIONS, make_context, model_refs
    from .token_pass import run_together

    options = options or {}
    names = name_list(names, "names")  # one analysis as a string is that analysis (it was read letter by letter)
    fns = {n: get(n) for n in names}
    unrun = sorted(set(options) - set(fns))
    if unrun:  # options for an analysis not run (a typo, or one left out): never dropped without a word
        raise EmbenchError(f"options given for {', '.join(unrun)}, which run_many does not run ({', '.join(fns)})")
    for n, fn in fns.items():
        check_options(n, fn.options, options.get(n, {}))
    stray = sorted(set(model_options) - set(MODEL_OPTIONS))
    if stray:  # an analysis' option given as a keyword (n_pairs=-5) was dropped, unchecked, without a word
        theirs = {k: [n for n, fn in fns.items() if k in fn.options] for k in stray}
        raise EmbenchError(f"run_many() got {', '.join(map(repr, stray))}, which is no model option ({', '.join(MODEL_OPTIONS)})"
                           + "".join(f"; {k} is an option of {', '.join(ns)}: pass options={{{ns[0]!r}: {{{k!r}: ...}}}}"
                                     for k, ns in theirs.items() if ns))
    check_folder_option(out, "out")
    devices = several_devices(model_options.get("device"))  # cuda:0,cuda:1 or all: one process per device
    if devices:
        model_options = {**model_options, "device": devices[0]}
    refs = model_refs(models, labels, **model_options)
    ctx = make_context(data, cache_dir, use_cache, batch_size, progress, devices)
    started = {n: start(fn, refs, ctx, out, options.get(n, {})) for n, fn in fns.items()}
    token = [n for n, s in started.items() if inspect.isgenerator(s)]
    results = dict(zip(token, run_together([started[n] for n in token]), strict=True))
    done = {n: results[n] if n in results else finish(started[n]) for n in names}
    return {n: record(fns[n], done[n], refs, ctx, out, options.get(n, {})) for n in names}
