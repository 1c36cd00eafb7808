"""The Python face of embench; the CLI is a thin layer over these functions."""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .core.arguments import name_list
from .core.boundary import python_api
from .core.errors import UndefinedScoreError
from .data.root import DataRoot, file_sha256
from .encoding.cache import default_cache_dir
from .encoding.encoder_interface import Encoder
from .encoding.engine import Engine
from .encoding.prompted import shared_pass_texts
from .encoding.vector_axes import VectorAxis, check_dims, one_axis, vector_axes
from .evaluation.api_arguments import evaluate_arguments, interval_arguments
from .evaluation.comparison import Comparison, Side, check_test, compare_sides
from .evaluation.evaluation_view import Evaluation
from .evaluation.items import Items
from .evaluation.protocols import EvalProtocol
from .evaluation.provenance import record_provenance
from .evaluation.record_checks import data_problem
from .evaluation.record_intervals import add_intervals
from .evaluation.results import Record, ResultStore, record_key
from .evaluation.seed_comparison import check_group_test, compare_seed_groups, seed_side
from .evaluation.seed_groups import SeedGroup, read_seed_group
from .evaluation.side_settings import named_sides, two_sides
from .evaluation.significance import IntervalSettings
from .evaluation.suites import SUITES
from .models.as_encoder import as_encoder
from .models.devices import prefill_views, several_devices
from .models.loader import load_model
from .models.model_names import check_local_path
from .report.progress import announce, third_party_bars
from .tasks import TASKS
from .tasks.names import resolve_tasks, task_kinds, with_task_aliases
from .tasks.recorded_protocol import seeded_protocol, task_protocol
from .tasks.stored_results import results  # kept apart: listing records imports no torch

log = logging.getLogger(__name__)
MODEL_OPTIONS = ("pooling", "layer", "max_length", "dtype", "device", "normalize", "prompt", "family", "bidirectional_last",
                 "bidirectional_mode", "adapter", "batch_tokens", "compile", "cuda_graphs", "unpadded", "revision", "prompt_name")


@python_api("evaluate")  # its errors in its parameters (ci=, not --ci); the caller's random state kept
def evaluate(
    model: str | Path | Encoder | Any,
    suite: str | None = None,
    *,
    tasks: Sequence[str] | None = None,
    data: str | Path | None = None,
    results_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    overwrite: bool = False,
    save: bool = True,
    batch_size: int | None = None,
    progress: bool | None = None,
    on_task: Callable[[str, str, Record], None] | None = None,
    label: str | None = None,
    ci: float | None = None,
    resamples: int | None = None,
    ci_seed: int | None = None,
    task_files: Sequence[str | Path] | None = None,
    **options: Any,
) -> Evaluation:
    """Evaluate a model on a suite and/or ``tasks`` (default ``sts-all``) and store one record per task.

    >>> ev = evaluate("all-MiniLM-L6-v2", "sts-all")   # doctest: +SKIP
    >>> ev.frame.round(4)                                # doctest: +SKIP

    ``model`` is a name, alias or folder, an encoder from :func:`load_model`, or any object with an
    ``encode(texts) -> array`` method, a ``SentenceTransformer`` among them (its vectors are cached and
    its records reused only when its state can be fingerprinted: see ``embench/models/foreign.py``).
    ``progress`` (default on) shows a bar in a terminal and elsewhere (a notebook, a log) a line every 30 s,
    as the command line does. ``label`` names the model's row (and, for an object, its records).
    ``options`` are protocol options (``aggregation``, ``correlation``, ``text``, ``sick_split``,
    ``stsb_split``, ``similarity``) and, when ``model`` is a name or path, model options
    (``pooling``, ``layer``, ``max_length``, ``dtype``, ``device``, ``normalize``, ``prompt``, ``prompt_name``,
    ``revision``: :func:`load_model`'s), and ``truncate_dim`` / ``quantize`` (each one or several: a row per pair).
    Finished tasks are kept in ``results_dir`` as they finish; a re-run reuses them unless
    ``overwrite``. ``ci`` (a level: 95 or 0.95) adds a bootstrap interval to every score and to
    ``Avg.`` (``resamples`` of them, seeded by ``ci_seed``, default the protocol's seed), computed
    from the per-item outcomes stored beside each record, so it costs no encoding. ``task_files`` are task
    files (YAML or TOML: a user's own data as a task, ``embench/tasks/task_file``); their tasks run unless
    ``tasks`` names others.
    """
    tasks, task_files = evaluate_arguments(suite, tasks, task_files, batch_size, on_task,  # before anything loads
                                           {"data": data, "results_dir": results_dir, "cache_dir": cache_dir},
                                           {"use_cache": use_cache, "overwrite": overwrite, "save": save, "progress": progress},
                                           label)
    if task_files:  # their tasks are registered for this call only: a later call without the files finds none
        from .tasks.task_file import task_files_registered  # (read only with a task file)

        with task_files_registered(task_files) as named:
            return evaluate(model, suite, tasks=tasks or named, data=data, results_dir=results_dir, cache_dir=cache_dir,
                            use_cache=use_cache, overwrite=overwrite, save=save, batch_size=batch_size, progress=progress,
                            on_task=on_task, label=label, ci=ci, resamples=resamples, ci_seed=ci_seed, **options)
    # (Over 60 lines with its signature and docstring; the body is the run's order of work, read at once.)
    if isinstance(model, (str, Path)) and (group := read_seed_group(model)) is not None:
        return _evaluate_group(group, suite, tasks=tasks, data=data, results_dir=results_dir, cache_dir=cache_dir,
                               use_cache=use_cache, overwrite=overwrite, save=save, batch_size=batch_size,
                               progress=progress, on_task=on_task, ci=ci, resamples=resamples, ci_seed=ci_seed,
                               label=label, **options)
    model_opts = {k: options.pop(k) for k in MODEL_OPTIONS if k in options}
    axes = vector_axes(options.pop("truncate_dim", None), options.pop("quantize", None))  # Matryoshka x precision
    if suite is None and not tasks:
        suite = "sts-all"
    task_names, view = resolve_tasks(suite, tasks)
    suite_defaults = SUITES.get(suite).protocol if suite else {}
    given = {**suite_defaults, **{k: v for k, v in options.items() if v is not None}}  # None: not given (an unset option)
    protocol = EvalProtocol.from_options(**given)
    interval_arguments(ci, resamples, ci_seed)
    settings = IntervalSettings.parse(ci, resamples, protocol.seed if ci_seed is None else ci_seed) if ci is not None else None
    root = DataRoot.resolve(data).require()  # before the model loads: a mistyped --data costs nothing
    devices = several_devices(model_opts.get("device"))  # --device cuda:0,cuda:1 (or all): one process per device
    if devices:
        model_opts["device"] = devices[0]  # this process scores; its encoder describes the run
    encoder = as_encoder(model, {k: v for k, v in model_opts.items() if v is not None}, label)
    store, enc_desc = ResultStore(results_dir), encoder.describe()
    reusable = getattr(encoder, "reusable", True)  # False: an object without a fingerprint (models/foreign.py)
    cache = (Path(cache_dir) if cache_dir is not None else default_cache_dir()) if use_cache and reusable else None
    progress = True if progress is None else bool(progress)  # off a terminal too: a line every 30 s, never silence
    engine = Engine(encoder, batch_size=batch_size, cache_dir=cache, progress=progress)
    if hasattr(encoder, "use_engines"):  # an ensemble: each member once through the engine and its cache
        encoder.use_engines(lambda member: Engine(member, batch_size=batch_size, cache_dir=cache))
    # the label names each row as the rows are named, with its " (dim 64, int8)": keyed by the bare name it matched none
    labels = {axis.row_name(encoder.name): axis.row_name(label) for axis in axes} if label else {}
    result = Evaluation(records=[], view=view, labels=labels, axis_rows=len(axes) > 1)

    def done(name: str, status: str, record: Record) -> None:
        result.records.append(record)
        result.status[result.key(record)] = status
        if on_task:
            on_task(name, status, record)

    # Read every task first (a missing file stops the run before any encoding), then encode the texts
    # of all of them in one pass sorted by length, then score and store each task in turn.
    pending: list[tuple[str, Any, str, Any]] = []
    run_protocol = functools.cache(lambda name: seeded_protocol(TASKS.get(name), protocol, "seed" in given))  # mteb: 42
    # once, however many axes; mteb's bars (its statistics of the local data) only with progress
    prepare = functools.cache(third_party_bars(progress)(lambda name: TASKS.get(name).prepare(root, run_protocol(name))))
    for name, axis in ((n, a) for n in task_names for a in axes):  # a record per (task, dimension, precision)
        task, row = TASKS.get(name), axis.row_name(encoder.name)
        key = record_key(name, axis.describe(enc_desc), task_protocol(task, run_protocol(name)).to_dict())
        stored = store.find(row, name, key) if save and not overwrite and reusable else None
        if stored is not None and stored.model != row:  # the same weights asked under another name: a row of its own
            stored = dataclasses.replace(stored, model=row)
        if stored is not None and (changed := data_problem(stored, root, file_sha256) or (
                task.stored_problem(stored, root) if hasattr(task, "stored_problem") else None)) is not None:
            warnings.warn(f"the stored record of {name} ({store.path(stored)}) is not reused: {changed}; "
                          "it is computed again", stacklevel=2)
            stored = None
        stored_items = store.load_items(stored) if stored is not None and settings is not None else None
        if stored is not None and (settings is None or stored_items is not None or task.kind == "mteb"):
            if stored_items is not None:
                result.items[(stored.model, name)] = stored_items
            done(name, "stored", stored)
        else:  # not stored, or stored without the per-item outcomes an interval needs (an older record)
            pending.append((name, task, key, axis, prepare(name)))
    if save and pending:  # before any encoding: an unwritable folder must not cost a run (all stored: only read)
        store.check_writable()
    undefined: list[str] = []  # tasks (and rows) with no score: said once the others are scored and stored
    for record, items in _scored(pending, engine, run_protocol, root, undefined, devices):
        if items is not None:
            result.items[(record.model, record.task)] = items
        if save:
            try:
                store.save(record, items)
            except OSError as e:  # a full disk mid-run: the scores are still returned (and printed), with why
                # the record's name: the OSError's is the temporary file's (core/atomic.py), removed by then
                result.unsaved[result.key(record)] = f"{store.path(record)}: {e.strerror or e}"
                log.warning("could not save the record of %s: %s", result.key(record), result.unsaved[result.key(record)])
        done(record.task, "computed", record)
    result.records.sort(key=lambda r: task_names.index(r.task))  # stored and computed, in the suite's order
    result.encode_stats = dict(engine.stats)
    if settings is not None:
        add_intervals(result, settings, store if save else None)
    if undefined:
        raise UndefinedScoreError(f"{', '.join(undefined)}: the score is undefined (nan) under {protocol.aggregation}/"
                                  f"{protocol.correlation}: the similarities (or the gold scores) of a part are all equal, so "
                                  "no correlation exists; the other tasks are scored and stored, " + ("these are not" if len(undefined) > 1 else "this one is not"), result)
    return result


def _evaluate_group(group: SeedGroup, suite: str | None, *, tasks: Sequence[str] | None, label: str | None,
                    **kwargs: Any) -> Evaluation:
    """Every seed of a seed group, then one row of their mean (and spread) under the group's name (or ``label``)."""
    one_axis(kwargs.get("truncate_dim"), kwargs.get("quantize"), "a seed group")  # its mean is over seeds, one configuration
    evs = [evaluate(str(path), suite, tasks=tasks, **kwargs) for _, path in sorted(group.members.items())]
    out = Evaluation.merge(evs, view=evs[0].view)
    out.seed_groups[group.key] = list(dict.fromkeys(r.model for ev in evs for r in ev.records))  # its folder: unique
    if label:  # the group's row, as `run --label` names it (the label was dropped)
        out.labels[group.key] = label
    return out


@python_api("compare")
def compare(
    model_a: str | Path,
    model_b: str | Path,
    suite: str | None = None,
    *,
    tasks: Sequence[str] | None = None,
    test: str = "bootstrap",
    alpha: float = 0.05,
    ci: float = 95,
    resamples: int | None = None,
    ci_seed: int | None = None,
    options_a: dict[str, Any] | None = None,
    options_b: dict[str, Any] | None = None,
    **options: Any,
) -> Comparison:
    """Is ``model_a`` better than ``model_b``? Paired tests per task (default ``sts-all``), Holm across tasks.

    >>> c = compare("all-MiniLM-L6-v2", "all-MiniLM-L6-v2", options_b={"pooling": "cls"})   # doctest: +SKIP
    >>> c.frame[["A", "B", "diff", "p holm", "verdict"]]                                      # doctest: +SKIP

    Both models are evaluated (stored records reused) under one protocol; each task's difference gets
    its paired-bootstrap interval and p-value, a paired permutation test and Steiger's test; ``test``
    picks the one behind the verdict. A seed group (a folder from ``train --seeds``) is compared by a
    hierarchical bootstrap over its seeds and the items instead (``embench/evaluation/seed_comparison.py``).
    ``options`` are :func:`evaluate`'s, for both sides; ``options_a``/``options_b`` one side's model settings alone
    (``pooling``, ``layer``, ...: ``evaluation/side_settings.py``), over shared ones. ``ci_seed``: as in evaluate.
    """
    sides, given = two_sides((model_a, model_b), options, (options_a, options_b))  # refused: A and B the same
    check_test(test, alpha, task_kinds(suite, name_list(tasks, "tasks")))  # before either model loads
    for m in (model_a, model_b):
        check_local_path(m)
    groups = [read_seed_group(m) if isinstance(m, (str, Path)) else None for m in (model_a, model_b)]
    if any(groups):
        check_group_test(test)  # before any encoding
    settings = IntervalSettings.parse(ci, resamples, ci_seed)  # checked before either model loads
    # no ci_seed: the protocol's seed, as `run --ci` draws (1111 here re-saved the intervals run had stored under --seed)
    kw = {"ci": settings.level, "resamples": settings.resamples, "ci_seed": ci_seed}
    ev_a, ev_b = (evaluate(m, suite, tasks=tasks, **kw, **side) for m, side in zip((model_a, model_b), sides, strict=True))
    settings = ev_a.interval_settings or settings
    names = named_sides((ev_a, ev_b), groups, given)  # "X (pooling=cls)"
    if any(groups):
        seeds = [seed_side(n, ev.records, ev.items, group=g is not None) for n, g, ev in zip(names, groups, (ev_a, ev_b), strict=True)]
        return with_task_aliases(compare_seed_groups(*seeds, settings, test, alpha))  # verdict("STSB") as -t takes it
    pairs = [(Side(a, ev_a.items.get((a.model, a.task))), Side(b, ev_b.items.get((b.model, b.task))))
             for a, b in zip(ev_a.records, ev_b.records, strict=True)]
    return with_task_aliases(compare_sides(pairs, settings, test, alpha, names))


def _scored(pending: list[tuple[str, Any, str, VectorAxis, Any]], engine: Engine,
            run_protocol: Callable[[str], EvalProtocol], root: DataRoot,
            undefined: list[str], devices: Sequence[str] = ()) -> Iterator[tuple[Record, Items | None]]:
    """Encode every pending task's texts in one pass (split over ``devices``, one process each, when several), then
    score each (under ``run_protocol(task)``); yield each record (and its items) when done, and add the name of each
    whose score is undefined to ``undefined`` instead."""
    start = time.perf_counter()
    if devices and pending:  # inside the pass's time: the records' encode_seconds include the processes' work
        prefill_views([engine], [t for *_, p in pending for t in p.texts], devices)
    shares = engine.prefetch([shared_pass_texts(engine.encoder, prepared) for *_, prepared in pending])
    prefetch_seconds = time.perf_counter() - start
    check_dims([p[3] for p in pending], engine.dim, engine.encoder.name)  # before any task is scored
    weights = [s["encoded"] for s in shares] if sum(s["encoded"] for s in shares) else [len(p.texts) for *_, p in pending]
    enc_desc = engine.encoder.describe()
    for (name, task, key, axis, prepared), share, weight in zip(pending, shares, weights, strict=True):
        before = dict(engine.stats)
        start = time.perf_counter()
        if task.kind == "transfer":  # a classifier search can take minutes (MR's nested 10 x 10 folds): said first
            announce(engine.progress, f"{task.display}: training SentEval's classifier on the embeddings "
                                      f"({prepared.meta.get('scheme', 'its')} validation)")
        embed = axis.embedder(engine.embed, prepared.texts)  # the vectors truncated and quantised (encoding/vector_axes.py)
        with third_party_bars(engine.progress):  # progress=False silences mteb's own bars too, as -q does
            outcome = prepared.score(embed)
        if not math.isfinite(outcome.main):  # never a NaN record: evaluate() says why there is none, after the others
            undefined.append(name + axis.row_name(""))
            continue
        # this task's scoring, plus its part of the shared encoding pass (by the texts it brought)
        scoring = time.perf_counter() - start
        encoding = prefetch_seconds * weight / max(sum(weights), 1)
        counts = {c: share[c] + engine.stats[c] - before[c] for c in ("encoded", "from_cache")}
        protocol = run_protocol(name)
        yield Record(
            task=name, display=task.display, kind=task.kind, model=axis.row_name(engine.encoder.name), main_score=float(outcome.main),
            scores=outcome.scores, protocol=task_protocol(task, protocol).to_dict(), encoder=axis.describe(enc_desc),
            provenance=record_provenance(enc_desc, root, prepared, outcome, protocol, engine, (encoding, scoring), counts)
            | embed.provenance(engine.dim), key=key,
        ), outcome.items


__all__ = ["Comparison", "Evaluation", "compare", "evaluate", "load_model", "results"]
