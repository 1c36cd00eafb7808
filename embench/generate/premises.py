"""Premises to generate from: a text file (one per line) or the data root's SNLI premises (``snli``).

A line that is empty or not UTF-8 is named (file and line) and skipped; the rest is used. Each premise
keeps a key, its line number (or its position among the SNLI premises), by which a resumed run knows
what is already written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core.errors import EmbenchError, MissingDataError
from ..data.root import DataRoot


@dataclass(frozen=True)
class Premise:
    key: int  # 1-based line number in the file, or position among the SNLI premises
    text: str


def read_premise_file(path: str | Path) -> tuple[list[Premise], list[str]]:
    """(premises, problems): every non-empty UTF-8 line, and a message per line skipped."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise MissingDataError(p) if not p.exists() else EmbenchError(f"--premises {p}: not a file")
    raw = p.read_bytes()
    premises, problems = [], []
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the newline that ends the last line
    for no, line in enumerate(lines, 1):
        try:
            text = line.decode("utf-8").strip().lstrip("\ufeff")
        except UnicodeDecodeError as e:
            problems.append(f"{p}:{no}: not UTF-8 (byte 0x{line[e.start]:02x} at column {e.start + 1}); line skipped")
            continue
        if not text:
            problems.append(f"{p}:{no}: empty line skipped")
            continue
        premises.append(Premise(no, text))
    if not premises:
        raise EmbenchError(f"--premises {p}: no premise (no non-empty UTF-8 line)")
    return premises, problems


def snli_premises(root: DataRoot) -> list[Premise]:
    """The premises of the data root's SNLI triplets (the ones ``--train-data snli`` trains on), in order."""
    from ..data.training_sets import snli_triplets

    return [Premise(i, t[0]) for i, t in enumerate(snli_triplets(root), 1)]


def read_premises(spec: str, data: str | None = None) -> tuple[list[Premise], list[str]]:
    """``snli`` (the data root's SNLI premises) or a file of one premise per line."""
    if spec.lower() == "snli":
        return snli_premises(DataRoot.resolve(data)), []
    return read_premise_file(spec)
