"""Every stored record in mteb's result layout, for ``mteb.ResultCache`` (``embench results export --format mteb``).

The layout is mteb's own, written by mteb's ``ResultCache.save_to_cache``::

    <out>/results/<model name, "/" as "__">/<revision>/model_meta.json
                                                   /run_settings.jsonl
                                                   /<task name>.json

* model name: a known alias as its hub id, an ``org/name`` id as it is, anything else (a folder)
  ``embench/<folder name>`` (:func:`~embench.tasks.mteb.adapter.mteb_model_name`);
* revision: the checkpoint's revision, else its weights' fingerprint, then ``-`` and a hash of the encoder
  settings and the protocol (:func:`~embench.tasks.mteb.adapter.mteb_revision`): one folder per configuration
  and protocol, as ``embench mteb export`` files MTEB records. ``model_meta.json`` names the model, that
  revision, the embedding size, the protocol's similarity, and the encoder settings (``loader_kwargs``);
* an MTEB-bridge record is mteb's own result as the bridge stored it (its task name, splits, subsets, every
  score); any other record (STS, transfer, a kind added later) is one result under a task name that carries
  its protocol (:mod:`embench.tasks.mteb.own_results`).

mteb rounds every score it writes to six decimals (``TaskResult.to_disk``); nothing else changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...core.errors import EmbenchError
from ...core.paths import unwritable
from .adapter import mteb_model_name, mteb_revision, records_model_meta, save_inside
from .own_results import own_task_result


def check_out_folder(out: Path | str) -> Path:
    """``out`` when it is a folder that does not exist yet or is empty: an export never merges into old files."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise EmbenchError(f"--out {out} is a file; give a new or empty folder for the mteb results")
    if out.is_dir() and any(out.iterdir()):
        raise EmbenchError(f"--out {out} is not empty; give a new or empty folder (an export does not merge into "
                           "earlier files: remove them or choose another folder)")
    return out


def as_task_result(record: Any):
    """The mteb ``TaskResult`` of a record: the bridge's stored mteb result, else the record's own form."""
    raw = (record.scores or {}).get("mteb_result")
    if raw is not None:
        from mteb.results import TaskResult

        return TaskResult.from_dict(raw)
    return own_task_result(record)


def _describe(record: Any) -> str:
    return f"{record.model} {record.task} (record {record.key})"


def export_mteb(records: list[Any], out: Path | str) -> list[Path]:
    """Write ``records`` under ``out`` in mteb's result layout; the task files written, in order.

    Every file's place is worked out before any is written: two records that land on one file (an alias and its
    hub id scored alike are one result, kept once; two different scores are an error naming both).

    >>> export_mteb(embench.results("results"), "mteb-results")   # doctest: +SKIP
    >>> mteb.ResultCache("mteb-results").load_results(include_remote=False)   # doctest: +SKIP
    """
    out = check_out_folder(out)
    if not records:
        raise EmbenchError("no records to export")
    if (e := unwritable(out)) is not None:  # before anything is converted: one message, not mteb's traceback
        raise EmbenchError(f"cannot write to --out {out} ({e.strerror or e}); choose another folder")
    groups: dict[tuple[str, str], list[Any]] = {}
    for r in records:
        groups.setdefault((mteb_model_name(r.model, r.encoder), mteb_revision(r)), []).append(r)
    from mteb.cache import ResultCache

    cache = ResultCache(out)
    planned: dict[Path, tuple[Any, Any, Any]] = {}  # file -> (record, result, meta)
    for group in groups.values():
        meta = records_model_meta(group)
        for r in group:
            result = as_task_result(r)
            path = Path(cache.get_task_result_path(task_name=result.task_name, model_name=meta))
            if path in planned:
                other = planned[path][0]
                if abs(other.main_score - r.main_score) > 1e-12:
                    raise EmbenchError(f"{_describe(other)} and {_describe(r)} would both be written to {path} with "
                                       f"different scores ({other.main_score} and {r.main_score}); export them "
                                       "separately (--model, --task)")
                continue
            planned[path] = (r, result, meta)
    return [save_inside(cache, out, result, meta, _describe(r)) for r, result, meta in planned.values()]

