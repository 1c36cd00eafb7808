"""The protocol axes a stored record's score depends on, read from the record alone (its kind, its task's name, what
its provenance says a task file is): what mteb's export names a record by, and what `results show` and `report` compare
records on, so that an axis a task is not scored under (SICK-R's split for STS13) never keeps its record apart."""

from __future__ import annotations

from typing import Any

from ..report.protocol_groups import protocol_of
from .recorded_protocol import TASK_KEYS
from .senteval.datasets import TRANSFER_DATASETS
from .sts.datasets import STS_DATASETS
from .sts.scored_axes import SPLIT_OPTIONS, ignored_axes

ROWS = {"sts": {r.name: r for r in STS_DATASETS}, "transfer": {r.name: r for r in TRANSFER_DATASETS}}  # declarations only


def protocol_axes(record: Any) -> tuple[str, ...]:
    """The protocol axes the record's score depends on, in the protocol's order.

    Those of its kind of task (as ``embench report`` keeps tables apart), narrowed by what its task is: a SemEval
    year has no split or regressor, STS-B and SICK-R no subsets to aggregate, a single-sentence transfer task no
    pair features; SentEval's regressor also depends on the seed it is trained with. A task file's record is narrowed
    by what its provenance says it is (``_task_file_drops``); any other task keeps every axis of its kind. Last, the
    keys the task adds (``task_data``, ``task_code``), where the record has them: two versions of one task file are
    two protocols of its task (`results show` rows, `report` groups, mteb task names), never of another task."""
    axes = [a for a, _ in protocol_of(record)]
    data = ROWS.get(record.kind, {}).get(record.task)
    own = (getattr(record, "provenance", None) or {}).get("task_meta", {})
    if record.kind == "sts" and data is not None:
        option = data.pair_format.split_option
        axes = [a for a in axes if a not in ignored_axes(option)]
        if option is not None and record.protocol.get("scoring") == "regressor":
            axes.append("seed")
    elif record.kind == "sts" and own.get("task_file_kind") == "pairs":
        axes = [a for a in axes if a not in _task_file_drops(own)]
        if str(own.get("scoring", "")) == "regressor":
            axes.append("seed")
    elif record.kind == "transfer" and (data.line != "pair-columns" if data is not None
                                        else own.get("task_file_kind") == "classification"):
        axes = [a for a in axes if a != "pair_features"]
    # what the task adds to its record's key (a task file's data digest, a plug-in's code): its score depends on it
    return (*axes, *(k for k in TASK_KEYS if record.protocol.get(k) and k not in axes))


def _task_file_drops(meta: dict[str, Any]) -> set[str]:
    """The axes a task file's pairs are not scored under (``provenance.task_meta``): STS-B's and SICK-R's splits never;
    the scoring when a file with no train split was scored by similarity (its meta says so) although the run asked
    for the regressor; the aggregation when the regressor scored it, or when it has one subset (all, mean and wmean
    are then one number)."""
    regressor = str(meta.get("scoring", "")) == "regressor"
    drop = {*SPLIT_OPTIONS, *(() if regressor else ("scoring",))}
    if regressor or len(set(meta.get("subsets") or ())) < 2:
        drop.add("aggregation")
    return drop
