"""Checking published tables: recompute every printed average, flag values duplicated in a row."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import EmbenchError
from ..core.paths import not_there

# cell markup that is not part of the number: bold, underline (embench's markdown writes <u>), LaTeX's thin spaces,
# footnote marks
_MARKS = re.compile(r"\\textbf\{|\\underline\{|\\emph\{|</?u>|\\[,;:!]|[{}$*♣♥♠♦†‡§¶⋆★∗]|\\(dagger|ddagger|star|diamond|clubsuit|heartsuit|spadesuit)|\\")
# what follows the number in its cell: a spread over seeds ("79.39±0.30", LaTeX's $\pm$) or an interval, as embench
# prints one ("36.92 [33.92, 39.34]", LaTeX "36.92\,{\scriptsize[33.92, 39.34]}")
_AFTER = re.compile(r"±|\\pm|\+-|\[|\{?\\scriptsize")
# a column separator: embench writes a | or & inside a cell (a model's name) as \| in markdown and \& in LaTeX
_MARKDOWN_CELL = re.compile(r"(?<!\\)\|")
_LATEX_CELL = re.compile(r"(?<!\\)&")


@dataclass
class TableIssue:
    table: int
    row: int  # 1-based line in the file
    name: str
    kind: str  # "average", "duplicate" or "unchecked" (a row with fewer cells than its header, not checked)
    message: str


def _number(cell: str) -> float | None:
    s = _AFTER.split(cell)[0]  # before the marks go: they take the backslash of \pm
    s = _MARKS.sub("", s).strip().rstrip("%").strip()
    if not any(ch.isdigit() for ch in s):
        return None  # "-", "n/a", "(missing in text)": no number printed

    return float(s)


def _is_number(cell: str) -> bool:
    try:
        return _number(cell) is not None
    except ValueError:
        return False


def _tables(path: Path) -> list[list[tuple[int, list[str]]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        line = path.read_bytes()[: e.start].count(b"\n") + 1
        raise EmbenchError(f"{path}:{line}: not UTF-8 text (a Markdown, LaTeX or CSV table is expected)") from None
    lines = text.splitlines()
    tables: list[list[tuple[int, list[str]]]] = []
    if path.suffix == ".csv":
        import csv

        return _csv_tables([(i, row) for i, row in enumerate(csv.reader(lines), start=1) if row])
    if path.suffix == ".tex" or "\\begin{tabular" in text:
        current: list[tuple[int, list[str]]] | None = None  # rows of the tabular open, if any (a caption is none)
        for i, line in enumerate(lines, start=1):
            if "\\begin{tabular" in line:
                current = []
            elif "\\end{tabular" in line and current is not None:
                tables.append(current)
                current = None
            elif current is not None and len(cells := _LATEX_CELL.split(line.split("\\\\")[0])) > 1:
                current.append((i, [c.strip() for c in cells]))
        return tables
    current = []
    for i, line in enumerate(lines, start=1):
        if line.lstrip().startswith("|"):
            cells = [c.strip().replace("\\|", "|") for c in _MARKDOWN_CELL.split(line.strip().strip("|"))]
            if all(re.fullmatch(r":?-{2,}:?", c) for c in cells if c):
                continue
            current.append((i, cells))
        elif current:
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    return tables


def _csv_tables(rows: list[tuple[int, list[str]]]) -> list[list[tuple[int, list[str]]]]:
    """A CSV as its tables: embench stacks several in one file under a ``table`` column (``run --ci`` its scores and
    notes, ``audit`` its variants, knobs and passes), each filling only its own columns; every other CSV is one table."""
    if not rows or "table" not in rows[0][1]:
        return [rows]
    header, at = rows[0][1], rows[0][1].index("table")
    tables: dict[str, list[tuple[int, list[str]]]] = {}
    for line, cells in rows[1:]:
        tables.setdefault(cells[at] if len(cells) > at else "", []).append((line, cells))
    out = []
    for part in tables.values():  # the columns this table fills, in the header's order
        used = [j for j in range(len(header)) if any(j < len(c) and c[j].strip() for _, c in part)]
        out.append([(rows[0][0], [header[j] for j in used])] + [(line, [c[j] if j < len(c) else "" for j in used])
                                                               for line, c in part])
    return out


def _is_average(header: str) -> bool:
    """An average column: "Avg.", "7 Avg." (JTCSE), "STS_avg"; not a difference of averages or a test of one (audit's "delta_avg", "avg_beyond_noise")."""
    return "avg" in header and not re.search(r"delta|diff|Δ|beyond", header) and not _is_bound(header)


def _is_bound(header: str) -> bool:
    """An interval's bound beside its score ("STS16 low", "Avg. high": embench's CSV of ``--ci``): not a task."""
    return header.endswith((" low", " high"))


def _label_columns(header: list[str], rows: list[list[str]]) -> int:
    """How many leading columns name the row: the first where some row holds text there (a table of numbers only has
    none: BeLLM's README), then each next one that embench's own outputs name a row by (``table``, ``model``,
    ``protocol``). Only by those names: a task column whose cells cannot be read ("60.0 (1.0)", a typo) stays an
    error, never a name that takes it out of the average."""
    n = 1 if any(c[0].strip() and not _is_number(c[0]) for c in rows) else 0
    while n and n < len(header) and header[n] in _NAME_HEADERS:
        n += 1
    return n


_NAME_HEADERS = ("table", "model", "protocol")  # the columns before the scores in `run`, `compare` and `audit` CSVs


def check_table(path: str | Path, tolerance: float = 0.01) -> list[TableIssue]:
    """Recompute every printed average of every table in ``path``; flag values duplicated in a row.

    A column whose header contains "avg" averages the numeric columns since the previous average
    column (or the first data column): JTCSE's tables print a "7 Avg." and a "3 Avg.". The first column
    names the row unless every row holds a number there (a table of scores only, as in BeLLM's README). A printed
    average is flagged when it differs from the mean of its cells by more than ``tolerance`` (two
    roundings of 0.005 each).
    """
    p = Path(path)
    if not p.is_file():
        raise EmbenchError(f"table file {p} {not_there(p)}")
    issues: list[TableIssue] = []
    checked = 0
    for t_index, table in enumerate(_tables(p), start=1):
        if len(table) < 2:
            continue
        header = [h.lower().strip() for h in table[0][1]]
        avg_cols = [j for j, h in enumerate(header) if _is_average(h)]
        if not avg_cols:
            continue
        checked += 1
        rows = [cells for _, cells in table[1:] if len(cells) >= len(header) and any(c.strip() for c in cells)]
        labels = _label_columns(header, rows) if rows else 1
        groups, start = [], labels
        for j in avg_cols:
            groups.append((j, [c for c in range(start, j) if not _is_bound(header[c])]))
            start = j + 1
        for line_no, cells in table[1:]:
            named = [_MARKS.sub("", cells[j]).strip() for j in range(min(labels, len(cells))) if header[j] != "table"]
            name = " ".join(n for n in named if n) or "unlabelled row"
            if len(cells) < len(header) and any(_is_number(c) for c in cells[labels or 1:]):
                # a cell left out: which task each number is under cannot be told (was skipped in silence)
                issues.append(TableIssue(t_index, line_no, name, "unchecked", f"{len(cells)} cells for the header's "
                                         f"{len(header)} columns: which column each number is in cannot be told"))
                continue
            if len(cells) < len(header) or not any(c.strip() for c in cells[labels or 1:]):
                continue  # section headings
            values: dict[int, float | None] = {}
            unreadable: list[int] = []
            for j in sorted({c for _, cols in groups for c in cols} | set(avg_cols)):
                try:
                    values[j] = _number(cells[j])
                except ValueError:
                    values[j] = None
                    unreadable.append(j)
            if unreadable:
                if all(v is None for v in values.values()):
                    continue  # a section heading spread over the columns
                j = unreadable[0]
                raise EmbenchError(f"{p}:{line_no}: column {j + 1} ({table[0][1][j]!r}) of row {name!r}: cannot read {cells[j]!r} as a number")
            for avg_j, cols in groups:
                printed = values.get(avg_j)
                cells_v = [values[c] for c in cols]
                if printed is None or len(cols) < 2 or any(v is None for v in cells_v):
                    continue
                mean = float(np.mean(cells_v))
                if abs(mean - printed) > tolerance + 1e-9:
                    issues.append(TableIssue(t_index, line_no, name, "average", f"printed {table[0][1][avg_j]} {printed:.2f}, mean of its {len(cols)} cells {mean:.2f}"))
            seen: dict[float, int] = {}
            for j in (c for _, cols in groups for c in cols):
                v = values.get(j)
                if v is None:
                    continue
                if v in seen:
                    issues.append(TableIssue(t_index, line_no, name, "duplicate", f"{v:.2f} appears under both {table[0][1][seen[v]]!r} and {table[0][1][j]!r}"))
                seen.setdefault(v, j)
    if not checked:  # "0 averages off" would read as a table that checks out
        raise EmbenchError(f"{p}: no table with an average column (a header with 'Avg') found: nothing to check "
                           "(Markdown rows start with '|', LaTeX tables sit in a tabular, CSV has a header row)")
    return issues
