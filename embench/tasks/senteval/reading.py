"""Reading SentEval's transfer task files exactly as SentEval reads them.

Everything SentEval does before the classifier is kept, because it moves the numbers: each file is
read with SentEval's encoding (latin-1 for MR/CR/SUBJ/MPQA/TREC), split on whitespace, and the samples
of each split are sorted as SentEval sorts them (by token count, then label) before the folds are
drawn, since the order decides which sentence falls in which fold.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...core.errors import EmbenchError, MalformedDataError
from ...data.readers import read_bytes
from ...data.root import DataRoot
from .datasets import TransferData

Tokens = list[str]
# A line parser: (path, line number, line) -> (first sentence's tokens, second's or None, label)
LineParser = Callable[[Path, int, str], tuple[Tokens, Tokens | None, int]]


@dataclass
class Samples:
    """One split, in SentEval's order: token lists (and second sentences for pairs) and labels."""

    a: list[Tokens]
    b: list[Tokens] | None
    y: np.ndarray

    def sorted_like_senteval(self) -> Samples:
        """SentEval sorts each split by (len(a), label), or (len(a), len(b), label) for pairs."""
        if self.b is None:
            order = sorted(range(len(self.a)), key=lambda i: (len(self.a[i]), self.y[i]))
            return Samples([self.a[i] for i in order], None, self.y[order])
        order = sorted(range(len(self.a)), key=lambda i: (len(self.a[i]), len(self.b[i]), self.y[i]))
        return Samples([self.a[i] for i in order], [self.b[i] for i in order], self.y[order])

    def texts(self) -> list[str]:
        join = [" ".join(t) for t in self.a]
        return join + ([" ".join(t) for t in self.b] if self.b is not None else [])


def _read_text(path: Path, encoding: str) -> str:
    raw = read_bytes(path)
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as e:
        raise MalformedDataError(path, raw[: e.start].count(b"\n") + 1, f"not valid {encoding} ({e.reason})") from None


def _lines(path: Path, encoding: str) -> list[str]:
    """Lines as ``for line in open(path)`` yields them (universal newlines), as SentEval reads."""
    lines = io.StringIO(_read_text(path, encoding), newline=None).read().split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _label(path: Path, i: int, value: str, labels: dict[str, int]) -> int:
    if value not in labels:
        raise MalformedDataError(path, i, f"unknown label {value!r}; expected one of: {', '.join(labels)}")
    return labels[value]


def _columns(path: Path, i: int, line: str, sep: str, n: int, exact: bool) -> list[str]:
    cols = line.strip().split(sep)
    if len(cols) < n or (exact and len(cols) != n):
        sep_name = "tab" if sep == "\t" else repr(sep)
        raise MalformedDataError(path, i, f"expected {n} {sep_name}-separated columns, found {len(cols)}")
    return cols


def parse_trec(labels: dict[str, int]) -> LineParser:
    """``COARSE:fine question tokens``: the coarse label, the question after the fine label."""

    def parse(path: Path, i: int, line: str):
        if ":" not in line:
            raise MalformedDataError(path, i, "expected 'LABEL:fine question', found no ':'")
        target, sample = line.strip().split(":", 1)
        if " " not in sample:
            raise MalformedDataError(path, i, "expected a question after the fine label")
        return sample.split(" ", 1)[1].split(), None, _label(path, i, target, labels)

    return parse


def parse_sst2(labels: dict[str, int]) -> LineParser:
    """``sentence<TAB>label``."""

    def parse(path: Path, i: int, line: str):
        text, label = _columns(path, i, line, "\t", 2, exact=True)
        return text.split(), None, _label(path, i, label.strip(), labels)

    return parse


def parse_sst_fine(labels: dict[str, int]) -> LineParser:
    """``label sentence`` (space-separated label first)."""

    def parse(path: Path, i: int, line: str):
        fields = line.strip().split(" ", 1)
        if len(fields) < 2:
            raise MalformedDataError(path, i, "expected 'label sentence', found one field")
        return fields[1].split(), None, _label(path, i, fields[0], labels)

    return parse


def parse_columns(a: int, b: int, y: int, ncols: int, labels: dict[str, int]) -> LineParser:
    """Tab-separated columns with a header line (MRPC, SICK): two sentences and a label column."""

    def parse(path: Path, i: int, line: str):
        cols = _columns(path, i, line, "\t", ncols, exact=True)  # a tab inside a sentence must not shift the label
        return cols[a].split(), cols[b].split(), _label(path, i, cols[y], labels)

    return parse


# line format name (TransferData.line) -> the parser of one row's lines
LINE_FORMATS: dict[str, Callable[[TransferData], LineParser]] = {
    "trec": lambda d: parse_trec(d.labels),
    "sst2": lambda d: parse_sst2(d.labels),
    "sst-fine": lambda d: parse_sst_fine(d.labels),
    "pair-columns": lambda d: parse_columns(*d.columns, d.labels),
}


def task_path(root: DataRoot, data: TransferData, file: str) -> Path:
    return root.senteval / data.folder / file


def read_task(root: DataRoot, data: TransferData) -> tuple[dict[str, Samples], list[Path]]:
    """Every split of a task in SentEval's order, and the files read."""
    parser = LINE_FORMATS[data.line](data) if data.line else None
    out, paths, empty = {}, [], []
    for split, files in data.splits.items():
        a, b, y = [], [], []
        for f in files:
            if parser is None:  # one file per class: every line is a sample
                file, label = f
                path = root.find(task_path(root, data, file), task=data.name)
                lines = _read_text(path, data.encoding).splitlines()  # binary.py: f.read().splitlines()
                a += [line.split() for line in lines]
                y += [label] * len(lines)
                if not lines:  # its class has no sample: named as the file, not as a split of one class
                    empty.append(path)
            else:
                path = root.find(task_path(root, data, f), task=data.name)
                for i, line in enumerate(_lines(path, data.encoding), start=1):
                    if (data.header and i == 1) or not line.strip():
                        continue
                    ta, tb, label = parser(path, i, line)
                    a.append(ta)
                    b.append(tb)
                    y.append(label)
            paths.append(path)
        if not y:  # an empty split would train or score on nothing
            raise EmbenchError(f"{', '.join(map(str, paths[-len(files):]))}: no samples in the {split} split of {data.name}")
        pair = bool(b) and b[0] is not None
        out[split] = Samples(a, b if pair else None, np.asarray(y, dtype=np.int64)).sorted_like_senteval()
    _check_classes(data, out, paths, empty)
    return out, paths


def _check_classes(data: TransferData, splits: dict[str, Samples], paths: list[Path], empty: list[Path]) -> None:
    """A split of fewer than two classes is a damaged file, refused here, before any encoding (the scorer's own check
    comes after every text is encoded, and names no file). Checked once every split is read, so that a malformed line
    is named first. Every split counts, test and dev too: no classifier trains on one class, and each of SentEval's
    splits holds every class of its task (TREC's test its 6, SST-5's dev its 5), so one class alone in a dev or test
    file means it lost the rest (a truncated copy), and its accuracy would score a classifier on one class only."""
    if empty:  # one file per class (MR, CR, SUBJ, MPQA): that class is missing from the pool
        raise EmbenchError(f"{', '.join(map(str, empty))}: no samples; {data.name} reads one class from each of its "
                           f"files and needs at least two classes")
    start = 0
    for split, files in data.splits.items():
        named, start = paths[start:start + len(files)], start + len(files)
        found = np.unique(splits[split].y).tolist()
        if len(found) < 2:
            label = next((k for k, v in data.labels.items() if v == found[0]), found[0])  # as the file writes it
            raise EmbenchError(f"{', '.join(map(str, named))}: every sample of the {split} split of {data.name} has the "
                               f"label {label!r}; a classifier needs at least two classes")
