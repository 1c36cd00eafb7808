"""embench's own records (STS under SentEval's protocols, transfer tasks, any other kind) as mteb ``TaskResult``s.

mteb has no task for these (its ``STS12`` is one protocol: raw text, cosine, Spearman over the pooled
subsets), so each is written under a task name of its own that carries the protocol it was scored under::

    embench-STS12__aggregation=all__correlation=spearman__text=senteval__similarity=cosine

``embench-`` and the record's task name, then ``axis=value`` for every protocol axis the task's score depends
on (``protocol_axes``; a task file's data digest, ``task_data``, too), joined by ``__`` as mteb joins experiment
settings. The same task under two protocols is two task names, never two entries of one result: mteb averages the
entries (subsets, splits) of a result into
its main score, and ``BenchmarkResults.to_dataframe`` keeps one revision per task name, so either would mix or
drop protocols. One score entry (``hf_subset`` ``default``, English) holds the record's main score, the protocol
as a mapping, and the record's own score table under ``embench``. mteb reads such a file without its task
registry (``ResultCache.load_results`` without ``validate_and_filter``).
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import re
from importlib import metadata
from typing import Any

from ...core.hashing import stable_hash
from ..record_axes import protocol_axes
from ..sts.scored_axes import SPLIT_OPTIONS

PREFIX = "embench-"
ENGLISH = ["eng-Latn"]  # every STS and SentEval set embench reads is English


def own_task_name(record: Any) -> str:
    """``embench-<task>__<axis>=<value>__...``, reduced to characters every file system takes. A task file's
    ``task_data`` is one of the axes: two versions of its data are two task names, as two protocols are (under one
    name, mteb's ``to_dataframe`` kept one of them); a plug-in's ``task_code`` (origin and code) is named by a hash."""
    label = "".join(f"__{a}={_named(a, record.protocol.get(a))}" for a in protocol_axes(record))
    return re.sub(r"[^A-Za-z0-9._=+-]", "_", f"{PREFIX}{record.task}{label}")


def _named(axis: str, value: Any) -> Any:
    return stable_hash(value, 16) if axis == "task_code" else value


def _split(record: Any, axes: tuple[str, ...]) -> str:
    """The split scored: STS-B's and SICK-R's protocol names it, every other task reports its test set."""
    return next((str(record.protocol[a]) for a in SPLIT_OPTIONS if a in axes), "test")


def _json_safe(value: Any) -> Any:
    """Plain JSON: a non-finite number (an undefined correlation) becomes None, numpy scalars plain numbers."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _date(provenance: dict[str, Any]) -> _dt.datetime | None:
    try:
        return _dt.datetime.fromisoformat(str(provenance["created"]))
    except (KeyError, ValueError):
        return None


@functools.cache  # read once: package metadata is a scan of site-packages, and an export builds a result per record
def mteb_version() -> str:
    """The installed mteb's version, which every result it builds is stamped with."""
    return metadata.version("mteb")


def own_task_result(record: Any):
    """The record as an mteb ``TaskResult`` (one split, one score entry), its main score unchanged.

    ``dataset_revision`` is a hash of the data files' sha256 the record stores (the data it was scored on);
    ``mteb_version`` the installed mteb's, as mteb stamps every result it builds (the file's format)."""
    from mteb.results import TaskResult

    prov = record.provenance or {}
    axes = protocol_axes(record)
    embench = {"task": record.task, "display": record.display, "kind": record.kind, "record_key": record.key,
               "version": prov.get("embench"), "commit": prov.get("embench_commit"), "scores": _json_safe(record.scores)}
    if record.ci:
        embench["ci"] = _json_safe(record.ci)
    entry = {"main_score": float(record.main_score), "hf_subset": "default", "languages": list(ENGLISH),
             "protocol": {a: record.protocol.get(a) for a in axes}, "embench": embench}
    files = prov.get("data_files")
    return TaskResult(
        dataset_revision=stable_hash(files, 16) if files else "not available",
        task_name=own_task_name(record),
        mteb_version=mteb_version(),
        scores={_split(record, axes): [entry]},
        evaluation_time=prov.get("wall_seconds"),
        date=_date(prov),
    )
