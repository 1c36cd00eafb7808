"""The rows of a task file's data files: tsv, csv or jsonl (``.gz`` too), every bad row named by file and line.

TSV is split on tabs with no quoting (as every STS and SentEval file is), and each line must have as many
fields as the header (or the first line): a tab inside a sentence would otherwise shift a column silently. With
``quoting: csv`` it is read as CSV with tabs (pandas' ``to_csv(sep="\\t")``); unset, a field that looks CSV-quoted
is refused rather than read with its quotes.
CSV follows RFC 4180 quoting (Python's :mod:`csv`). A UTF-8 byte-order mark (a spreadsheet's export) is
dropped.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...core.errors import EmbenchError, MalformedDataError
from ...data.readers import iter_jsonl, parse_score, read_text
from .declaration import OPTIONAL_ROLES, ROLES, Declaration

Row = tuple[int, dict[str, object]]  # (line number, role -> value)


def _lines(path: Path) -> list[str]:
    text = read_text(path)
    if "\r" in text and "\n" not in text:  # old Mac OS line endings (a CR alone, as some spreadsheets still export):
        text = text.replace("\r", "\n")  # read as one line, the header named every row of the file as its columns
    lines = [line.removesuffix("\r") for line in text.split("\n")]  # only \n and \r\n end a line, never a U+2028
    return lines[:-1] if lines and lines[-1] == "" else lines


def _index(decl: Declaration, path: Path, names: list[str] | None, width: int) -> dict[str, int]:
    """role -> field index, from the header line's names or the declared indices."""
    out = {}
    for role, col in decl.columns.items():
        if isinstance(col, str):
            if names is None or col not in names:
                raise MalformedDataError(path, 1, f"no column {col!r} for {role} (the header has: {', '.join(names or [])}); "
                                                  f"set columns.{role} in {decl.path}")
            out[role] = names.index(col)
        elif col >= width:
            raise MalformedDataError(path, 1, f"columns.{role} is {col}, but the line has {width} fields (0-based)")
        else:
            out[role] = col
    for role in _undeclared_optional(decl):  # as a required role: a column named as the role, when the header has one
        if names is not None and role in names:
            out[role] = names.index(role)
    return out


def _undeclared_optional(decl: Declaration) -> list[str]:
    """The optional roles (a pairs file's ``subset``) not under ``columns:``: read from a column named as the role, if any."""
    return [role for role in OPTIONAL_ROLES.get(decl.kind, ()) if role not in decl.columns]


def _table(decl: Declaration, path: Path) -> Iterator[Row]:
    lines = _lines(path)
    if decl.format == "tsv" and decl.quoting != "csv":
        records = ((i, _unquoted(decl, path, i, line.split("\t"))) for i, line in enumerate(lines, start=1) if line.strip())
    else:  # csv (tsv with quoting: csv): a quoted field may span lines; a record is numbered by the line it starts on
        reader, records = csv.reader((line + "\n" for line in lines), delimiter="," if decl.format == "csv" else "\t"), []
        try:
            start = 1
            for fields in reader:
                if any(f.strip() for f in fields):
                    records.append((start, fields))
                start = reader.line_num + 1
        except csv.Error as e:
            raise MalformedDataError(path, reader.line_num, f"not valid CSV ({e})") from None
    records = iter(records)
    first = next(records, None)
    if first is None:
        return
    names = [f.strip() for f in first[1]] if decl.header else None
    width = len(first[1])
    index = _index(decl, path, names, width)
    what = "tab-separated fields" if decl.format == "tsv" else "comma-separated fields"
    for i, fields in records if decl.header else [first, *records]:
        if len(fields) != width:
            raise MalformedDataError(path, i, f"{len(fields)} {what} where the {'header' if decl.header else 'first line'} "
                                              f"has {width}" + _width_hint(decl, fields))
        yield i, {role: fields[k] for role, k in index.items()}


def _width_hint(decl: Declaration, fields: list[str]) -> str:
    if decl.format != "tsv":
        return ""
    quoted = decl.quoting is None and any(f[:1] == '"' for f in fields)  # pandas quotes a text with a tab in it
    return " (a tab inside a text?" + ("; a quoted one: set quoting: csv in the task file)" if quoted else ")")


def _unquoted(decl: Declaration, path: Path, line: int, fields: list[str]) -> list[str]:
    """A TSV line's fields, refused when ``quoting`` is unset and one reads as CSV-quoted (in quotes, with a doubled
    quote inside: pandas' ``to_csv(sep="\\t")`` writes ``He said "x"`` so): read as written, its quotes would be scored
    as part of the text, and an STS file's bare quotes do not take that form."""
    if decl.quoting is None:
        for k, f in enumerate(fields):
            if len(f) > 3 and f[0] == f[-1] == '"' and '""' in f[1:-1]:
                raise MalformedDataError(path, line, f"field {k + 1} ({f[:40]!r}) looks CSV-quoted; set quoting: csv in "
                                                     f"{decl.path} to read quoted fields as pandas writes them, or "
                                                     "quoting: none to keep the quotes as text")
    return fields


def _jsonl(decl: Declaration, path: Path) -> Iterator[Row]:
    optional, first = _undeclared_optional(decl), None  # read when the objects have the key: all of them, or none
    for i, obj in iter_jsonl(path):  # blank lines skipped; a line that is not a JSON object names its line
        missing = [f"{col!r} ({role})" for role, col in decl.columns.items() if col not in obj]
        if missing:
            raise MalformedDataError(path, i, f"no key {', '.join(missing)}; the object has: {', '.join(map(str, obj))}")
        present = [role for role in optional if role in obj]
        first = present if first is None else first
        if present != first:
            odd = sorted(set(present) ^ set(first))
            raise MalformedDataError(path, i, f"key {', '.join(map(repr, odd))} is in some objects and not in others; "
                                              "give it in every object, or in none")
        yield i, {**{role: obj[col] for role, col in decl.columns.items()}, **{role: obj[role] for role in present}}


def rows(decl: Declaration, split: str) -> Iterator[Row]:
    """(line, role -> value) of every row of ``split``'s file."""
    path = decl.files[split]
    yield from (_jsonl if decl.format == "jsonl" else _table)(decl, path)


def _text(path: Path, line: int, role: str, value: object) -> str:
    if not isinstance(value, str):
        raise MalformedDataError(path, line, f"{role} is {type(value).__name__} {value!r}, not a text")
    if not value.strip():  # an empty cell is a lost value, not a sentence
        raise MalformedDataError(path, line, f"{role} is empty")
    return value


def _label(path: Path, line: int, value: object, role: str = "label") -> str:
    """A label, or (``role="subset"``) a subset's name: a non-empty string or an integer, as written."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or (isinstance(value, str) and not value.strip()):
        what = "is empty" if isinstance(value, str) else f"is {type(value).__name__} {value!r}"
        raise MalformedDataError(path, line, f"{role} {what}; a {role} is a non-empty string or an integer")
    return str(value).strip()


@dataclass
class Pairs:
    """A split of a pairs task: aligned sentences, gold scores, and each pair's subset (None: one set)."""

    left: list[str]
    right: list[str]
    gold: np.ndarray
    subsets: list[str] | None


@dataclass
class Labelled:
    """A split of a classification task: texts (and second texts), and their labels as written."""

    a: list[str]
    b: list[str] | None
    labels: list[str]
    lines: list[int]


def _nonempty(decl: Declaration, split: str, n: int) -> None:
    if n == 0:  # an empty split would score or train on nothing
        raise EmbenchError(f"{decl.files[split]}: no rows in the {split} split of task file {decl.path}")


def read_pairs(decl: Declaration, split: str) -> Pairs:
    path, (lo, hi) = decl.files[split], decl.score_range  # type: ignore[misc]
    left, right, gold, subsets = [], [], [], []
    for i, r in rows(decl, split):
        left.append(_text(path, i, "sentence1", r["sentence1"]))
        right.append(_text(path, i, "sentence2", r["sentence2"]))
        score = r["score"]
        if isinstance(score, bool) or not isinstance(score, (str, int, float)):
            raise MalformedDataError(path, i, f"score {score!r} is not a number")
        gold.append(parse_score(path, i, str(score).strip(), "score", lo, hi))
        if "subset" in r:
            subsets.append(_label(path, i, r["subset"], "subset"))
    _nonempty(decl, split, len(gold))
    return Pairs(left, right, np.asarray(gold, dtype=np.float64), subsets if subsets else None)


def read_labelled(decl: Declaration, split: str) -> Labelled:
    path, pair = decl.files[split], "sentence1" in ROLES[decl.kind]
    a, b, labels, lines = [], [], [], []
    for i, r in rows(decl, split):
        a.append(_text(path, i, "sentence1" if pair else "text", r["sentence1" if pair else "text"]))
        if pair:
            b.append(_text(path, i, "sentence2", r["sentence2"]))
        label = _label(path, i, r["label"])
        if decl.labels is not None and label not in decl.labels:
            raise MalformedDataError(path, i, f"label {label!r} is not one of the declared labels: {', '.join(decl.labels)}")
        labels.append(label)
        lines.append(i)
    _nonempty(decl, split, len(labels))
    return Labelled(a, b if pair else None, labels, lines)
