"""Paper tables from result folders (``embench.report_tables``, ``embench report``). Here, above the evaluation layer
that reads the folders (:mod:`embench.evaluation.scan`), because a task is asked for as ``run`` and ``results show``
take it, by any of its aliases (``stsb``, ``STS-B``): the task registry knows those, and it lives in this layer."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

from ..core.arguments import name_list
from ..core.boundary import python_api
from ..core.errors import EmbenchError
from ..evaluation.results import Record
from ..evaluation.scan import NoMatchingRecords, scan_results
from ..evaluation.suites import SUITES
from ..models.aliases import canonical_model
from ..report.model_match import same_model
from ..report.paper import SPLITS, PaperTable, paper_tables
from .names import stored_task_names
from .record_axes import protocol_axes


def _asked_task(task: str, records: Sequence[Record]) -> str:
    """The stored task ``task`` names: a stored task or display name in any case (a task file's task is registered
    only while its run reads the file), else a registered name or alias as ``results show`` resolves it."""
    stored = {n.lower(): r.task for r in records for n in (r.task, r.display)}
    return stored.get(task.lower()) or stored_task_names(task, records).pop()


def _task_order(suite: str | None, tasks: Sequence[str], records: Sequence[Record]) -> dict[str, int]:
    """Each wanted task's column place by every name it is stored or asked under (lower case); default: every task
    of the suites, in their order."""
    if not suite and not tasks:
        return {t.lower(): i for i, t in enumerate(dict.fromkeys(t for _, s in SUITES.items() for t in s.tasks))}
    named = [*((t, t) for t in (SUITES.get(suite).tasks if suite else ())), *((t, _asked_task(t, records)) for t in tasks)]
    order: dict[str, int] = {}
    for i, names in enumerate(named):
        for name in names:
            order.setdefault(name.lower(), i)
    return order


@python_api("report_tables")  # its errors say models=, split=, not the command line's --model, --split
def report_tables(results_dirs: Sequence[str | Path], models: Sequence[str] = (), suite: str | None = None,
                  tasks: Sequence[str] | None = None, names: dict[str, str] | None = None, split: str | None = None,
                  lower_is_better: Sequence[str] = (), caption: str | None = None) -> tuple[list[PaperTable], list[tuple[Path, str]]]:
    """Paper tables from result folders, and ``(file, problem)`` for every record that could not be read.

    ``models`` are model names as stored (or their last path part), the rows in their order; ``suite``/``tasks``
    pick the columns and their order (tasks by name, alias or display name, any case, as ``run`` takes them;
    default: every task stored, in the suites' order). Records of one kind made under different protocols raise
    :class:`~embench.report.paper.ProtocolMixError` unless ``split`` is ``"tables"`` or ``"rows"``. Folders holding no
    record, or none of the models or tasks asked for, raise :class:`~embench.evaluation.scan.NoMatchingRecords`.

    >>> tables, skipped = report_tables(["results"], suite="sts-all")  # doctest: +SKIP
    """
    # one folder, model or task as a string is that one (it was read letter by letter)
    results_dirs, models, tasks = name_list(results_dirs, "results_dirs"), name_list(models, "models") or [], name_list(tasks, "tasks")
    if split is not None and split not in SPLITS:
        raise EmbenchError(f"--split {split!r}: choose one of {', '.join(SPLITS)} (or leave it out)")
    return tables_of_records(*scan_results(results_dirs), results_dirs, models=models, suite=suite, tasks=tasks,
                             names=names, split=split, lower_is_better=lower_is_better, caption=caption)


def tables_of_records(records: list[Record], problems: list[tuple[Path, str]], results_dirs: Sequence[str | Path],
                      models: Sequence[str] = (), suite: str | None = None, tasks: Sequence[str] | None = None,
                      names: dict[str, str] | None = None, split: str | None = None, lower_is_better: Sequence[str] = (),
                      caption: str | None = None) -> tuple[list[PaperTable], list[tuple[Path, str]]]:
    """:func:`report_tables` of the records (and problems) ``scan_results(results_dirs)`` gave, its arguments checked:
    `embench report` scans once for its tables, its task names and its --name check alike."""
    order = _task_order(suite, tasks or (), records)  # every record's names: a task file's task another model ran too
    if models:
        known = sorted({r.model for r in records})
        missing = [m for m in models if not any(same_model(r.model, m) for r in records)]
        if missing:
            said = (f"no stored results for model(s) {', '.join(missing)} in {', '.join(map(str, results_dirs))}; "
                    f"stored: {', '.join(known) or 'none'}")
            raise NoMatchingRecords(said, records) if len(missing) == len(models) else EmbenchError(said)  # some: a typo
        records = [r for r in records if any(same_model(r.model, m) for m in models)]
    if suite or tasks:
        held, records = records, [r for r in records if r.task.lower() in order or r.display.lower() in order]
        if not records:
            asked = [*(SUITES.get(suite).tasks if suite else ()), *(tasks or ())]
            raise NoMatchingRecords(f"no stored results for task(s) {', '.join(asked)} in {', '.join(map(str, results_dirs))}", held)
    if not records and not problems:  # not a folder of damaged records (paper_tables names none to report): one with none
        raise NoMatchingRecords(f"no stored results in {', '.join(map(str, results_dirs))}", [])
    if not records:  # every record damaged: each named, not a bare "nothing to report"
        raise EmbenchError("no result record to report; skipped: " + "; ".join(f"{p}: {why}" for p, why in problems))
    records = sorted(records, key=lambda r: order.get(r.task.lower(), order.get(r.display.lower(), len(order))))
    stored = {r.model for r in records}
    # else ignored without a word (the CLI checks analyses too)
    if unused := [m for m in names or {} if not any(same_model(s, m) for s in stored)]:
        warnings.warn(f"names: no record has the model(s) {', '.join(map(repr, unused))}, so their names are not used "
                      f"(models found: {', '.join(sorted(stored)) or 'none'})", stacklevel=2)
    # rows in the order of -m (the columns' order is the records'): the first model asked is the first row
    rows = sorted(stored, key=lambda s: next((i for i, m in enumerate(models) if same_model(s, m)), len(models)))
    tables = paper_tables(records, names=names, split=split, lower_is_better=lower_is_better, caption=caption,
                          model_order=rows if models else (), axes_of=protocol_axes,  # STS13 is no SICK-R split's
                          model_of=canonical_model)  # an alias and its hub id: one row, as `results show` has them
    return tables, problems
