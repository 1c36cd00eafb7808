"""Reading result folders for reports: every record that checks out, every file that does not (named), for the paper
tables :func:`embench.tasks.report_tables.report_tables` makes of them (light: no model, no torch, so `embench report`
starts fast).

Unlike :meth:`ResultStore.records` (used where a damaged record is simply computed again), a report
cannot recompute: it lists each damaged file with its problem and reports the rest.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from ..core.errors import EmbenchError
from ..core.paths import not_there
from .results import Record, record_problem


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
