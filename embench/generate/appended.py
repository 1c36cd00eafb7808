"""A CSV that a run appends to row by row (triplets, curation answers), as a resumed run reads it back.

Each row is written whole with its newline and flushed, so a run killed mid-write leaves at most its last row
cut short. Such a row can still parse into the right number of fields (a sentence or an answer cut after its
first characters, or a last field left empty): only its missing end tells it apart, so it is dropped for that,
never judged by its fields, and its triplet is generated or scored again.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ..core.atomic import write_output


def complete_rows(path: Path) -> tuple[list[list[str]], bool]:
    """The rows of ``path`` written to their end, and whether a last row cut short was left out: one whose newline is
    missing, or that stops inside a quoted field (a newline within an answer is not a row's end; a writer's quotes
    come in pairs, so an odd count means the file ends inside one). A blank file has no rows."""
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return [], False
    rows = list(csv.reader(io.StringIO(text, newline="")))
    cut = not text.endswith("\n") or text.count('"') % 2 == 1
    return (rows[:-1] if cut else rows), cut


def rewrite_rows(path: Path, rows: list[list[str]], flag: str) -> None:
    """``path`` holding ``rows`` alone (a cut row left out), written whole: a kill here must not lose the good rows."""
    buf = io.StringIO(newline="")
    csv.writer(buf, lineterminator="\n").writerows(rows)
    write_output(path, buf.getvalue(), flag)
