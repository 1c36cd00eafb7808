"""The Python face of embench; the CLI is a thin layer over these functions."""

from __future__ import annotations

import datetime as _dt
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .core.errors import EmbenchError
from .data.root import DataRoot
from .encoding.cache import default_cache_dir
from .encoding.engine import Engine
from .evaluation.protocols import EvalProtocol
from .evaluation.provenance import data_checksums, software
from .evaluation.results import Record, ResultStore, record_key
from .evaluation.suites import SUITES
from .models.encoder import Encoder
from .models.loader import load_model
from .report.tables import breakdown_frame, render, summary_frame
from .tasks import TASKS

log = logging.getLogger(__name__)
MODEL_OPTIONS = ("pooling", "layer", "max_length", "dtype", "device", "normalize", "prompt", "family")


@dataclass
class Evaluation:
    """What :func:`evaluate` returns: the records, how each was obtained, and tables of them."""

    records: list[Record]
    status: dict[str, str] = field(default_factory=dict)  # task -> "computed" | "stored"
    view: str = "summary"
    encode_stats: dict[str, Any] = field(default_factory=dict)
    unsaved: dict[str, str] = field(default_factory=dict)  # task -> why its record could not be saved

    @property
    def frame(self) -> pd.DataFrame:
        """One row per model, tasks as columns, then Avg. (fractions, not x100)."""
        return summary_frame(self.records)

    @property
    def breakdown(self) -> pd.DataFrame:
        return breakdown_frame(self.records)

    def render(self, fmt: str = "table") -> str:
        if self.view == "breakdown":
            return render(self.breakdown, fmt, scaled=["pearson", "spearman"])
        return render(self.frame, fmt, highlight=True)  # several models: best bold, second underlined


def resolve_tasks(suite: str | None, tasks: Sequence[str] | None) -> tuple[list[str], str]:
    """Canonical task names and the view to show: the suite's tasks, then ``tasks`` not already in it.

    With ``tasks`` and no suite, only those tasks; with neither, ``sts-all``.
    """
    s = SUITES.get(suite or "sts-all") if suite or not tasks else None
    names = list(s.tasks) if s else []
    names += [TASKS.canonical(t) for t in tasks or ()]
    return list(dict.fromkeys(names)), s.view if s else "summary"


def evaluate(
    model: str | Path | Encoder,
    suite: str | None = None,
    *,
    tasks: Sequence[str] | None = None,
    data: str | Path | None = None,
    results_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    overwrite: bool = False,
    save: bool = True,
    batch_size: int = 128,
    progress: bool = False,
    on_task: Callable[[str, str, Record], None] | None = None,
    **options: Any,
) -> Evaluation:
    """Evaluate a model on a suite and/or ``tasks`` (default ``sts-all``) and store one record per task.

    >>> ev = evaluate("all-MiniLM-L6-v2", "sts-all")   # doctest: +SKIP
    >>> ev.frame.round(4)                                # doctest: +SKIP

    ``options`` are protocol options (``aggregation``, ``correlation``, ``text``, ``sick_split``,
    ``stsb_split``, ``similarity``) and, when ``model`` is a name or path, model options
    (``pooling``, ``layer``, ``max_length``, ``dtype``, ``device``, ``normalize``, ``prompt``).
    Finished tasks are kept in ``results_dir`` as they finish; a re-run reuses them unless
    ``overwrite``.
    """
    # (Over 60 lines with its signature and docstring; the body is the run's order of work, read at once.)
    model_opts = {k: options.pop(k) for k in MODEL_OPTIONS if k in options}
    if suite is None and not tasks:
        suite = "sts-all"
    task_names, view = resolve_tasks(suite, tasks)
    suite_defaults = SUITES.get(suite).protocol if suite else {}
    protocol = EvalProtocol.from_options(**{**suite_defaults, **{k: v for k, v in options.items() if v is not None}})
    encoder = _as_encoder(model, {k: v for k, v in model_opts.items() if v is not None})
    root, store, enc_desc = DataRoot.resolve(data), ResultStore(results_dir), encoder.describe()
    cache = (Path(cache_dir) if cache_dir is not None else default_cache_dir()) if use_cache else None
    if save:
        store.check_writable()  # before any encoding: an unwritable results folder must not cost a run
    engine = Engine(encoder, batch_size=batch_size, cache_dir=cache, progress=progress)
    result = Evaluation(records=[], view=view)

    def done(name: str, status: str, record: Record) -> None:
        result.records.append(record)
        result.status[name] = status
        if on_task:
            on_task(name, status, record)

    # Read every task first (a missing file stops the run before any encoding), then encode the texts
    # of all of them in one pass sorted by length, then score and store each task in turn.
    pending: list[tuple[str, Any, str, Any]] = []
    for name in task_names:
        task = TASKS.get(name)
        key = record_key(name, enc_desc, protocol.to_dict())
        stored = store.find(encoder.name, name, key) if save and not overwrite else None
        if stored is not None:
            done(name, "stored", stored)
        else:
            pending.append((name, task, key, task.prepare(root, protocol)))
    for record in _scored(pending, engine, protocol, root, batch_size):
        if save:
            try:
                store.save(record)
            except OSError as e:  # a full disk mid-run: the scores are still returned (and printed), with why
                result.unsaved[record.task] = f"{store.path(record)}: {e.strerror or e}"
                log.warning("could not save the record of %s: %s", record.task, result.unsaved[record.task])
        done(record.task, "computed", record)
    result.records.sort(key=lambda r: task_names.index(r.task))  # stored and computed, in the suite's order
    result.encode_stats = dict(engine.stats)
    return result


def _scored(pending: list[tuple[str, Any, str, Any]], engine: Engine, protocol: EvalProtocol, root: DataRoot,
            batch_size: int) -> Iterator[Record]:
    """Encode the texts of every pending task in one pass, then score each; yields each record as it is done."""
    start = time.perf_counter()
    shares = engine.prefetch([prepared.texts for *_, prepared in pending])
    prefetch_seconds = time.perf_counter() - start
    weights = [s["encoded"] for s in shares] if sum(s["encoded"] for s in shares) else [len(p.texts) for *_, p in pending]
    enc_desc = engine.encoder.describe()
    for (name, task, key, prepared), share, weight in zip(pending, shares, weights, strict=True):
        before = dict(engine.stats)
        start = time.perf_counter()
        outcome = prepared.score(engine.embed)
        # this task's scoring, plus its part of the shared encoding pass (by the texts it brought)
        wall = time.perf_counter() - start + prefetch_seconds * weight / max(sum(weights), 1)
        counts = {c: share[c] + engine.stats[c] - before[c] for c in ("encoded", "from_cache")}
        yield Record(
            task=name, display=task.display, kind=task.kind, model=engine.encoder.name, main_score=float(outcome.main),
            scores=outcome.scores, protocol=protocol.to_dict(), encoder=enc_desc,
            provenance=_provenance(enc_desc, root, prepared, outcome, protocol, batch_size, wall, counts), key=key,
        )


def _provenance(enc_desc: dict[str, Any], root: DataRoot, prepared: Any, outcome: Any, protocol: EvalProtocol,
                batch_size: int, wall: float, counts: dict[str, int]) -> dict[str, Any]:
    """Where a record came from: software, model, data files and their checksums, settings, time."""
    return {
        **software(),
        "model_source": enc_desc.get("source"),
        "model_revision": enc_desc.get("revision"),
        "model_fingerprint": enc_desc.get("fingerprint"),
        "data_root": str(root.path),
        "data_files": data_checksums(root, prepared.files),
        "task_meta": {**prepared.meta, **outcome.meta},
        "batch_size": batch_size,
        "dtype": enc_desc.get("dtype"),
        "device": enc_desc.get("device"),
        "seed": protocol.seed,
        "wall_seconds": round(wall, 3),
        "texts_encoded": counts["encoded"],
        "texts_from_cache": counts["from_cache"],
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def _as_encoder(model: str | Path | Encoder, model_opts: dict[str, Any]) -> Encoder:
    if isinstance(model, (str, Path)):
        return load_model(model, **model_opts)
    if model_opts:
        raise EmbenchError(
            f"model options {sorted(model_opts)} apply when the model is given by name; "
            "pass them to load_model() instead"
        )
    return model


def results(results_dir: str | Path | None = None, model: str | None = None, task: str | None = None) -> list[Record]:
    """Stored records, optionally filtered by model (substring) and task."""
    return ResultStore(results_dir).records(model=model, task=task)


__all__ = ["Evaluation", "evaluate", "load_model", "results"]
