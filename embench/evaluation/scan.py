"""Reading result folders for reports: every record that checks out, every file that does not (named),
and the paper tables made of them (light: no model, no torch, so `embench report` starts fast).

Unlike :meth:`ResultStore.records` (used where a damaged record is simply computed again), a report
cannot recompute: it lists each damaged file with its problem and reports the rest.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path

from ..core.arguments import name_list
from ..core.boundary import python_api
from ..core.errors import EmbenchError
from ..core.paths import not_there
from ..report.paper import SPLITS, PaperTable, paper_tables
from .results import Record, record_problem
from .suites import SUITES


class NoMatchingRecords(EmbenchError):
    """No stored record is of the models or tasks asked for; ``held`` are the records the folders do hold (the command
    line says what they are, as ``results show`` does, and exits 1: nothing to show, not an error)."""

    def __init__(self, message: str, held: list[Record]):
        super().__init__(message)
        self.held = held


def scan_results(folders: Sequence[Path | str]) -> tuple[list[Record], list[tuple[Path, str]]]:
    """Records of ``<folder>/<model>/<task>-<key>.json`` in every folder, and ``(file, problem)`` for
    each file that does not decode or fails :func:`record_problem`. A missing folder is an error."""
    records: list[Record] = []
    problems: list[tuple[Path, str]] = []
    for folder in map(Path, folders):
        if not folder.is_dir():
            raise EmbenchError(f"results folder {folder} {not_there(folder, 'folder')} (give a folder made by `embench run --results-dir`)")
        for path in sorted(folder.glob("*/*.json")):
            try:
                raw = json.loads(path.read_bytes().decode("utf-8"))
            except (OSError, ValueError, RecursionError) as e:  # ValueError: JSONDecodeError, an integer of 4300+ digits
                problems.append((path, f"cannot be read ({type(e).__name__}: {e})"))
                continue
            problem = record_problem(raw)
            if problem is not None:
                problems.append((path, problem))
            else:
                records.append(Record.from_dict(raw))
    return records, problems


def _same_model(stored: str, asked: str) -> bool:
    """A stored model name matches the name asked for, or their last path parts do (folders moved)."""
    return stored == asked.rstrip("/") or Path(stored).name == Path(asked.rstrip("/")).name


def _task_order(suite: str | None, tasks: Sequence[str] | None) -> list[str]:
    if suite or tasks:
        return [*(SUITES.get(suite).tasks if suite else ()), *(tasks or ())]
    return list(dict.fromkeys(t for _, suite in SUITES.items() for t in suite.tasks))


@python_api("report_tables")  # its errors say models=, split=, not the command line's --model, --split
def report_tables(results_dirs: Sequence[str | Path], models: Sequence[str] = (), suite: str | None = None,
                  tasks: Sequence[str] | None = None, names: dict[str, str] | None = None, split: str | None = None,
                  lower_is_better: Sequence[str] = (), caption: str | None = None) -> tuple[list[PaperTable], list[tuple[Path, str]]]:
    """Paper tables from result folders, and ``(file, problem)`` for every record that could not be read.

    ``models`` are model names as stored (or their last path part); ``suite``/``tasks`` pick the columns
    and their order (tasks by name or display name, any case; default: every task stored, in the
    suites' order). Records of one kind made under different protocols raise
    :class:`~embench.report.paper.ProtocolMixError` unless ``split`` is ``"tables"`` or ``"rows"``. Folders holding no
    record, or none of the models or tasks asked for, raise :class:`NoMatchingRecords`.

    >>> tables, skipped = report_tables(["results"], suite="sts-all")  # doctest: +SKIP
    """
    # one folder, model or task as a string is that one (it was read letter by letter)
    results_dirs, models, tasks = name_list(results_dirs, "results_dirs"), name_list(models, "models") or [], name_list(tasks, "tasks")
    if split is not None and split not in SPLITS:
        raise EmbenchError(f"--split {split!r}: choose one of {', '.join(SPLITS)} (or leave it out)")
    records, problems = scan_results(results_dirs)
    if models:
        known = sorted({r.model for r in records})
        missing = [m for m in models if not any(_same_model(r.model, m) for r in records)]
        if missing:
            said = (f"no stored results for model(s) {', '.join(missing)} in {', '.join(map(str, results_dirs))}; "
                    f"stored: {', '.join(known) or 'none'}")
            raise NoMatchingRecords(said, records) if len(missing) == len(models) else EmbenchError(said)  # some: a typo
        records = sorted((r for r in records if any(_same_model(r.model, m) for m in models)),
                         key=lambda r: next(i for i, m in enumerate(models) if _same_model(r.model, m)))
    order = _task_order(suite, tasks)
    if suite or tasks:
        wanted = {t.lower() for t in order}
        held, records = records, [r for r in records if r.task.lower() in wanted or r.display.lower() in wanted]
        if not records:
            raise NoMatchingRecords(f"no stored results for task(s) {', '.join(order)} in {', '.join(map(str, results_dirs))}", held)
    if not records and not problems:  # not a folder of damaged records (paper_tables names none to report): one with none
        raise NoMatchingRecords(f"no stored results in {', '.join(map(str, results_dirs))}", [])
    if not records:  # every record damaged: each named, not a bare "nothing to report"
        raise EmbenchError("no result record to report; skipped: " + "; ".join(f"{p}: {why}" for p, why in problems))
    by_name = {t.lower(): i for i, t in enumerate(order)}
    records = sorted(records, key=lambda r: by_name.get(r.task.lower(), by_name.get(r.display.lower(), len(order))))
    stored = {r.model for r in records}
    if unused := [m for m in names or {} if m not in stored]:  # else ignored without a word (the CLI checks analyses too)
        warnings.warn(f"names: no record has the model(s) {', '.join(map(repr, unused))}, so their names are not used "
                      f"(models found: {', '.join(sorted(stored)) or 'none'})", stacklevel=2)
    tables = paper_tables(records, names=names, split=split, lower_is_better=lower_is_better, caption=caption)
    return tables, problems
