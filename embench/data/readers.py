"""Readers for the plain-text data formats, gzip-aware, that name the file and line on bad input."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator
from pathlib import Path

from ..errors import MalformedDataError


def open_text(path: Path) -> io.TextIOBase:
    """Open a UTF-8 text file, transparently decompressing ``.gz``."""
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def read_lines(path: Path) -> list[str]:
    """All lines of a text file without their line endings (``\\n``, ``\\r\\n``)."""
    try:
        with open_text(path) as f:
            return f.read().splitlines()
    except UnicodeDecodeError as e:
        # Find the line: count newlines before the failing byte offset.
        data = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
        line = data[: e.start].count(b"\n") + 1
        raise MalformedDataError(path, line, f"not valid UTF-8 ({e.reason})") from None


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of a JSON-lines file (``.gz`` allowed).

    A line that is not a JSON object is a MalformedDataError naming the file and line.
    """
    with open_text(path) as f:
        for i, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise MalformedDataError(path, i, f"not valid JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise MalformedDataError(path, i, f"expected a JSON object, found {type(row).__name__}")
            yield i, row


def iter_tsv(path: Path, min_fields: int, skip_header: bool = False) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) for each non-blank line of a tab-separated file."""
    for i, line in enumerate(read_lines(path), start=1):
        if skip_header and i == 1:
            continue
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < min_fields:
            raise MalformedDataError(
                path, i, f"expected at least {min_fields} tab-separated fields, found {len(fields)}"
            )
        yield i, fields


def parse_float(path: Path, line: int, value: str, what: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise MalformedDataError(path, line, f"{what} {value!r} is not a number") from None
    if x != x:
        raise MalformedDataError(path, line, f"{what} is NaN")
    return x
