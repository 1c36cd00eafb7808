"""An analysis output (a CSV of ``embench analyze``, a ``metrics.jsonl`` of ``embench train``) read for a figure, checked
first: an empty file, a row cut short (a kill or a full disk mid-write), a row with a field missing or a text where the
column holds numbers is one error naming the file and line, never a pandas traceback or a NaN drawn silently."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ..core.errors import EmbenchError

TEXT_COLUMNS = {"model"}  # names: "1" and "bert" in one column is no number column with a typo in it


def _damaged(path: Path, where: str, problem: str) -> EmbenchError:
    return EmbenchError(f"{path}{where}: {problem}; the file is damaged (a run killed or a disk full while it was "
                        "written): make it again with the command that wrote it")


def read_csv(path: Path, columns: Sequence[str] = ()) -> pd.DataFrame:
    """``path``'s table; every row as many fields as the header, the last one whole (embench ends every file with a
    newline), a column of numbers numbers throughout, and every one of ``columns`` (those a figure draws from) there."""
    text = path.read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if not rows or not any(rows[0]):
        raise _damaged(path, "", "it is empty, without even its header line")
    if missing := [c for c in columns if c not in rows[0]]:  # else a KeyError traceback from the figure drawn
        raise EmbenchError(f"{path}:1: no column {', '.join(map(repr, missing))} (its header: {', '.join(rows[0])}); "
                           f"the figure needs {', '.join(columns)}: make the file again with the command that wrote it")
    if not text.endswith("\n"):
        raise _damaged(path, f":{len(rows)}", "its last row is cut short (no line end)")
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(rows[0]):
            raise _damaged(path, f":{line}", f"{len(row)} fields where the header has {len(rows[0])}")
    frame = pd.read_csv(io.StringIO(text))
    for column in frame.columns:
        if column in TEXT_COLUMNS or not pd.api.types.is_string_dtype(frame[column]):  # str (pandas 3) or object
            continue
        numbers = pd.to_numeric(frame[column], errors="coerce")
        bad = numbers.isna() & frame[column].notna()
        if numbers.notna().any() and bad.any():  # a number column with a cell that is no number
            at = int(bad.to_numpy().nonzero()[0][0])
            raise _damaged(path, f":{at + 2}", f"column {column!r} holds numbers, but this row has {frame[column].iloc[at]!r}")
    return frame


def read_jsonl(path: Path) -> pd.DataFrame:
    """``path``'s log lines, each a JSON object; a line that is not one (cut short) is an error naming it."""
    rows = []
    for line, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except ValueError:  # JSONDecodeError, or a number past the digits Python converts
            row = None
        if not isinstance(row, dict):
            raise _damaged(path, f":{line}", "not a JSON object (a line cut short; `embench train --resume` drops a "
                                             "torn last line of its log)")
        rows.append(row)
    return pd.DataFrame(rows)
