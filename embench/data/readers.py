"""Readers for the plain-text data formats, gzip-aware, that name the file and line on bad input."""

from __future__ import annotations

import codecs
import gzip
import io
import json
import math
import zlib
from collections.abc import Iterator
from pathlib import Path

from ..core.errors import CorruptFileError, MalformedDataError
from ..core.surrogates import json_surrogate_problem

_GZIP_ERRORS = (EOFError, OSError, zlib.error)  # truncated stream, bad header (BadGzipFile), bad data


class _GzipText(io.TextIOWrapper):
    """UTF-8 text of a ``.gz`` file whose read errors name the file (a truncated gzip otherwise
    raises a bare ``EOFError`` from deep inside the decompressor)."""

    def __init__(self, path: Path, encoding: str = "utf-8"):
        super().__init__(gzip.open(path, "rb"), encoding=encoding, newline="")
        self._path = Path(path)

    def _fail(self, e: BaseException):
        raise CorruptFileError(self._path, f"cannot decompress it ({type(e).__name__}: {e})") from None

    def __next__(self) -> str:
        try:
            return super().__next__()
        except _GZIP_ERRORS as e:
            self._fail(e)

    def read(self, size: int | None = -1) -> str:
        try:
            return super().read(size)
        except _GZIP_ERRORS as e:
            self._fail(e)

    def readline(self, size: int = -1) -> str:
        try:
            return super().readline(size)
        except _GZIP_ERRORS as e:
            self._fail(e)


def open_text(path: Path, encoding: str = "utf-8-sig") -> io.TextIOBase:
    """Open a text file, transparently decompressing ``.gz``; a damaged gzip is a CorruptFileError naming it. A UTF-8
    byte-order mark (a spreadsheet's or Notepad's export) is dropped: it would be part of the first field."""
    if Path(path).suffix == ".gz":
        return _GzipText(path, encoding)
    return open(path, encoding=encoding, newline="")


def read_bytes(path: Path) -> bytes:
    """The (decompressed) bytes of a file; a damaged gzip is a CorruptFileError naming it."""
    raw = Path(path).read_bytes()
    if Path(path).suffix != ".gz":
        return raw
    try:
        return gzip.decompress(raw)
    except _GZIP_ERRORS as e:
        raise CorruptFileError(path, f"cannot decompress it ({type(e).__name__}: {e})") from None


def read_text(path: Path) -> str:
    """The (decompressed) text of a UTF-8 file, a byte-order mark dropped; bytes that are not UTF-8 are a
    MalformedDataError naming their line."""
    raw = read_bytes(path)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:  # its offset does not count the byte-order mark
        start = e.start + (len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0)
        raise MalformedDataError(path, raw[:start].count(b"\n") + 1, f"not valid UTF-8 ({e.reason})") from None


def read_lines(path: Path) -> list[str]:
    """All lines of a text file without their line endings (``\\n``, ``\\r\\n``)."""
    return read_text(path).splitlines()


def read_text_lines(path: Path) -> list[str]:
    """The lines of a text file as ``datasets.load_dataset("text")`` reads them (SimCSE's training sentences): only
    ``\\n``, ``\\r\\n`` and a lone ``\\r`` end a line (Python's universal newlines). A U+2028, U+0085 or form
    feed inside a sentence is text, where ``str.splitlines`` (``read_lines``, as SentEval reads its files) cuts there."""
    return read_text(path).replace("\r\n", "\n").replace("\r", "\n").split("\n")


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of a JSON-lines file (``.gz`` allowed).

    A line that is not UTF-8 or not a JSON object, or whose strings hold a lone surrogate (an escape such as
    ``\\ud800`` without its other half: no text), is a MalformedDataError naming the file and line.
    """
    for i, raw in enumerate(read_bytes(path).split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8-sig" if i == 1 else "utf-8")
        except UnicodeDecodeError as e:
            raise MalformedDataError(path, i, f"not valid UTF-8 ({e.reason})") from None
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise MalformedDataError(path, i, f"not valid JSON ({e.msg})") from None
        if not isinstance(row, dict):
            raise MalformedDataError(path, i, f"expected a JSON object, found {type(row).__name__}")
        problem = json_surrogate_problem(line, row)
        if problem is not None:  # every reader of texts from JSON comes through here: named before the engine chokes
            raise MalformedDataError(path, i, problem)
        yield i, row


def iter_tsv(path: Path, min_fields: int, header: tuple[str, ...] = (),
             counts: tuple[int, ...] = ()) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) for each non-blank line of a tab-separated file; ``header``: the first fields of the header
    line the file starts with (checked: a file without it would lose its first row as a header); ``counts``: the only
    field counts allowed (a tab inside a sentence must not shift the columns)."""
    for i, line in enumerate(read_lines(path), start=1):
        if header and i == 1:
            if tuple(f.strip() for f in line.split("\t")[: len(header)]) != header:
                raise MalformedDataError(path, 1, f"expected the header line {' '.join(header)} ..., found "
                                                  f"{line[:80]!r} (a row in its place would be skipped as the header)")
            continue
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < min_fields:
            raise MalformedDataError(
                path, i, f"expected at least {min_fields} tab-separated fields, found {len(fields)}"
            )
        check_field_count(path, i, len(fields), counts)
        yield i, fields


def check_field_count(path: Path, line: int, found: int, counts: tuple[int, ...]) -> None:
    if counts and found not in counts:
        allowed = " or ".join(map(str, counts))
        raise MalformedDataError(path, line, f"expected {allowed} tab-separated fields, found {found} (a tab inside a sentence?)")


def parse_float(path: Path, line: int, value: str, what: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise MalformedDataError(path, line, f"{what} {value!r} is not a number") from None
    if not math.isfinite(x):
        raise MalformedDataError(path, line, f"{what} {value!r} is not finite")
    return x


def parse_score(path: Path, line: int, value: str, what: str, low: float, high: float) -> float:
    """A finite number in [low, high] (a gold score out of its scale is a damaged line, not data)."""
    x = parse_float(path, line, value, what)
    if not low <= x <= high:
        raise MalformedDataError(path, line, f"{what} {x} is outside its scale [{low:g}, {high:g}]")
    return x
