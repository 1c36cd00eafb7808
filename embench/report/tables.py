"""Result tables as papers print them: tasks as columns, then Avg.; scores x100, two decimals."""

from __future__ import annotations

import io
import math
from collections.abc import Collection, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:  # records are read by their fields only: report imports nothing of the layers above it
    from ..evaluation.results import Record

from .formats import FORMATS  # noqa: E402,F401  (re-exported: the formats tables render to)


def column_names(records: Sequence[Record]) -> list[str]:
    """Each record's column: its display, except an mteb task's, which is one column per task whatever display its
    records were stored with: ``MTEB:<name>`` (``*`` kept) where another task's records show its bare name or any of
    its own records was stored under the prefix (``MTEBTask.display`` takes it once a task file or plug-in task of its
    name is registered), else the bare name. Keyed by display alone, one task's records of two runs made two columns
    (each model's row missing one: Avg. empty), and a task file's score and MTEB's shared one."""
    others = {r.display.rstrip("*") for r in records if r.kind != "mteb"}
    prefixed = {r.task for r in records if r.kind == "mteb" and r.display.startswith(r.task)}

    def column(r: Record) -> str:
        if r.kind != "mteb":
            return r.display
        star, bare = "*" * r.display.endswith("*"), r.display.rstrip("*").removeprefix(r.task)
        bare = bare or r.task.split(":", 1)[-1]
        return r.task + star if r.task in prefixed or bare in others else bare + star

    return [column(r) for r in records]


def summary_frame(records: Sequence[Record]) -> pd.DataFrame:
    """One row per model, one column per task (display name, in first-seen order), then ``Avg.``.

    Values are the main scores as fractions; ``Avg.`` is recomputed from the cells, and left empty
    for a row that misses a task.
    """
    columns: list[str] = []
    rows: dict[str, dict[str, float]] = {}
    for r, column in zip(records, column_names(records), strict=True):
        if column not in columns:
            columns.append(column)
        rows.setdefault(r.model, {})[column] = r.main_score
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=columns)
    frame["Avg."] = frame.mean(axis=1, skipna=False)
    frame.index.name = "model"
    return frame


def breakdown_frame(records: Sequence[Record]) -> pd.DataFrame:
    """Every subset and aggregation of every STS record: n, Pearson, Spearman."""
    rows = []
    for r in records:
        s = r.scores
        for name, sub in s.get("subsets", {}).items():
            rows.append({"model": r.model, "task": r.display, "subset": name, "n": sub["n"], "pearson": sub["pearson"], "spearman": sub["spearman"]})
        for agg in ("all", "mean", "wmean"):
            if agg in s:
                rows.append({"model": r.model, "task": r.display, "subset": agg, "n": s.get("n"), **s[agg]})
    return pd.DataFrame(rows, columns=["model", "task", "subset", "n", "pearson", "spearman"])


def _fmt(x) -> str:
    if isinstance(x, float):
        return "" if math.isnan(x) else f"{100 * x:.2f}"
    return str(x)


def _cells(frame: pd.DataFrame, scaled: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    header = [frame.index.name or ""] + [str(c) for c in frame.columns] if frame.index.name else [str(c) for c in frame.columns]
    body = []
    for idx, row in frame.iterrows():
        cells = [str(idx)] if frame.index.name else []
        for c in frame.columns:
            v = row[c]
            cells.append(_fmt(float(v)) if c in scaled and v is not None and not pd.isna(v) else ("" if pd.isna(v) else str(v)))
        body.append(cells)
    return header, body


def ranks(frame: pd.DataFrame, columns: Sequence[str], lower: Collection[str] = (),
          groups: Sequence[Hashable] | None = None) -> dict[tuple[int, str], int]:
    """(row position, column) -> 1 for the best value of each column, 2 for the second best.

    Ties share the rank (every row holding the best value is bold, and the next distinct value is
    second); values are compared as shown (x100, two decimals), so 82.031 and 82.034 tie as papers
    print them. In the columns named in ``lower`` the smallest value is best. ``groups`` (one key per
    row) ranks each row only against the rows of its own key: the rows of one protocol in a
    ``--split rows`` table. Columns with fewer than two values (in a group) are not ranked.
    """
    keys = list(groups) if groups is not None else [None] * len(frame)
    out: dict[tuple[int, str], int] = {}
    for key in dict.fromkeys(keys):
        rows = [i for i, k in enumerate(keys) if k == key]
        for c in columns:
            values = frame[c].iloc[rows]
            shown = {i: round(100 * float(v), 2) for i, v in zip(rows, values, strict=True) if v is not None and not pd.isna(v)}
            if len(shown) < 2:
                continue
            distinct = sorted(set(shown.values()), reverse=c not in lower)
            for i, v in shown.items():
                if v in distinct[:2]:
                    out[(i, c)] = distinct.index(v) + 1
    return out


def with_extra_columns(frame: pd.DataFrame, extra: Mapping[str, Mapping[tuple[str, str], float]]) -> pd.DataFrame:
    """For machine-readable formats: ``<column> <name>`` (e.g. ``low``, ``high``, ``std``) after each column
    that has such a value for some row; ``extra`` maps name -> (row, column) -> value."""
    out = frame.copy()
    for c in frame.columns:
        at = list(out.columns).index(c) + 1
        for name, values in extra.items():
            if any((row, c) in values for row in frame.index):
                out.insert(at, f"{c} {name}", [values.get((row, c), float("nan")) for row in frame.index])
                at += 1
    return out


def _split(intervals: Mapping[tuple[str, str], tuple[float, float]] | None) -> dict[str, dict[tuple[str, str], float]]:
    return {"low": {k: v[0] for k, v in (intervals or {}).items()}, "high": {k: v[1] for k, v in (intervals or {}).items()}}


INTERVAL_CELL = {  # how a score and its interval share a cell, per format
    "table": "{v}\n[{lo}, {hi}]",
    "markdown": "{v} [{lo}, {hi}]",
    "latex": "{v}\\,{{\\scriptsize[{lo}, {hi}]}}",
}
SPREAD_CELL = {"table": "{v} ± {s}", "markdown": "{v} ± {s}", "latex": "{v}\\,$\\pm$\\,{s}"}  # mean +- std over seeds


def render(frame: pd.DataFrame, fmt: str, scaled: Sequence[str] | None = None, title: str | None = None,
           highlight: bool = False, intervals: Mapping[tuple[str, str], tuple[float, float]] | None = None,
           note: str | None = None, spreads: Mapping[tuple[str, str], float] | None = None,
           lower: Collection[str] = (), groups: Sequence[Hashable] | None = None) -> str:
    """Render a frame; columns in ``scaled`` (default: every float column) are shown x100.

    ``highlight`` marks the best value of each scaled column in bold and the second best underlined
    (LaTeX ``\\textbf``/``\\underline``, markdown ``**``/``<u>``, rich bold/underline), as papers do
    when several models are compared (the smallest value in the ``lower`` columns; among the rows of one
    ``groups`` key only, see :func:`ranks`). ``intervals`` ((row, column) -> (low, high)) are shown under or
    beside each score, or as ``low``/``high`` columns in CSV and JSON; ``spreads`` ((row, column) -> a
    standard deviation) as ``mean ± std`` or ``std`` columns; ``note`` is printed under the table.
    """
    if (intervals or spreads) and fmt in ("json", "csv"):
        frame = with_extra_columns(frame, {**_split(intervals), "std": dict(spreads or {})})
        scaled, intervals, spreads = None, None, None
    if scaled is None:
        scaled = [c for c in frame.columns if pd.api.types.is_float_dtype(frame[c])]
    if fmt == "json":
        from .json_records import frame_json  # full precision: to_json wrote a p of 9.5e-14 as 0.0

        return frame_json(frame.reset_index() if frame.index.name else frame)
    header, body = _cells(frame, scaled)
    if fmt == "markdown":  # escaped before the marks (** and <u>) go on
        header, body = [markdown_escape(h) for h in header], [[markdown_escape(cell) for cell in row] for row in body]
        title = markdown_escape(title) if title else title
    if fmt == "table":  # cells are text, not rich markup: a row "best [tower-1]" printed as "best" before
        from rich.markup import escape

        body = [[escape(cell) for cell in row] for row in body]
    if highlight and fmt in ("latex", "markdown", "table") and len(frame) > 1:
        offset = 1 if frame.index.name else 0
        marks = {"latex": ("\\textbf{%s}", "\\underline{%s}"), "markdown": ("**%s**", "<u>%s</u>"),
                 "table": ("[bold]%s[/bold]", "[underline]%s[/underline]")}[fmt]
        cols = list(frame.columns)
        for (i, c), rank in ranks(frame, [c for c in cols if c in scaled], lower, groups).items():
            j = offset + cols.index(c)
            body[i][j] = marks[rank - 1] % body[i][j]
    if intervals and fmt in INTERVAL_CELL:
        offset, cols = (1 if frame.index.name else 0), list(frame.columns)
        for i, row in enumerate(frame.index):
            for c in cols:
                if (row, c) in intervals:
                    lo, hi = (_fmt(float(x)) for x in intervals[(row, c)])
                    j = offset + cols.index(c)
                    body[i][j] = INTERVAL_CELL[fmt].format(v=body[i][j], lo=lo, hi=hi)
    if spreads and fmt in SPREAD_CELL:
        offset, cols = (1 if frame.index.name else 0), list(frame.columns)
        for (row, c), s in spreads.items():
            if row in frame.index and c in cols:
                i, j = list(frame.index).index(row), offset + cols.index(c)
                body[i][j] = SPREAD_CELL[fmt].format(v=body[i][j], s=_fmt(float(s)))
    footer = f"\n{markdown_escape(note) if fmt == 'markdown' else note}\n" if note else ""
    if fmt == "csv":
        buf = io.StringIO()
        pd.DataFrame(body, columns=header).to_csv(buf, index=False)
        return buf.getvalue()
    if fmt == "markdown":
        right = [i for i, h in enumerate(header) if h in {markdown_escape(c) for c in scaled} or h == "n"]
        sep = ["---:" if i in right else "---" for i in range(len(header))]
        lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        return (f"\n**{title}**\n\n" if title else "") + "\n".join(lines) + "\n" + footer
    if fmt == "latex":
        tabular = latex_tabular(header, body, right={h for h in header if h in scaled or h == "n"}, raw_cells=highlight or bool(intervals) or bool(spreads))
        return (latex_comment(title) if title else "") + tabular + (latex_comment(note) if note else "")
    if fmt == "table":
        from rich.console import Console
        from rich.table import Table

        table = Table(title=escape(title) if title else title)
        for h in header:
            table.add_column(escape(h), justify="right" if h in scaled or h == "n" else "left", style="bold" if h == "Avg." else None)
        for r in body:
            table.add_row(*r)
        # the table's natural width, whatever the terminal: a cell is never wrapped nor cut with an ellipsis
        console = Console(file=io.StringIO(), width=100_000, force_terminal=False, emoji=False)  # a name's :x: as written
        console.print(table)
        return console.file.getvalue() + (f"{note}\n" if note else "")
    raise ValueError(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")


def stacked_csv(parts: Sequence[tuple[Mapping[str, Any], str]]) -> str:
    """Several tables as one CSV that reads back, where CSV blocks one after another read back as one garbled table.
    Each part is ``(key, csv)``: a table as :func:`render` writes it (its own cells, x100 or not), and the values that
    say which table a row is from (e.g. the audit's model and table), as the first columns; then every table's
    columns in the order they first appear, empty where a table has none."""
    frames = []
    for key, text in parts:
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)  # the cells as written
        frames.append(pd.concat([pd.DataFrame({k: [v] * len(frame) for k, v in key.items()}), frame], axis=1))
    buf = io.StringIO()
    pd.concat(frames, ignore_index=True).to_csv(buf, index=False)
    return buf.getvalue()


def csv_with_notes(text: str, notes: Sequence[str], name: str) -> str:
    """A table's CSV (``text``) with the notes the other formats print under it, as :func:`stacked_csv` parts: a
    ``table`` column says which rows are ``name``'s and which are ``notes``, each in the ``note`` column. Not ``#``
    lines: they do not read back as CSV (pandas without ``comment=``, the csv module, spreadsheets)."""
    if not notes:
        return text
    return stacked_csv([({"table": name}, text), ({"table": "notes"}, notes_csv(notes))])


def notes_csv(notes: Sequence[str]) -> str:
    """The notes part of :func:`csv_with_notes` (one ``note`` column, a row each), for a CSV of several tables."""
    return render(pd.DataFrame({"note": list(notes)}), "csv", scaled=[])


# every character LaTeX gives a meaning: a model name holding \input{...} must print, never run (a file
# of the reader's machine would be read into the PDF)
_LATEX_ESCAPES = {"&": r"\&", "%": r"\%", "_": r"\_", "#": r"\#", "$": r"\$", "{": r"\{", "}": r"\}",
                  "\\": r"\textbackslash{}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  # under LaTeX's default font encoding these print as other glyphs (| as a dash, < as an inverted !)
                  "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", "\n": " ", "\r": " "}


def latex_escape(text: str) -> str:
    """``text`` printed as it is in LaTeX: every special character escaped, a line break a space, and a leading
    ``[`` or ``*`` guarded (after ``\\\\`` or booktabs' ``\\midrule`` LaTeX reads it as their optional argument)."""
    out = "".join(_LATEX_ESCAPES.get(ch, ch) for ch in text)
    return "{}" + out if out[:1] in ("[", "*") else out


def latex_comment(text: str) -> str:
    """``text`` as LaTeX comment lines: every line of it after a ``%`` (a newline in a prompt ended the comment, and
    what followed ran as LaTeX)."""
    return "".join(f"% {line}\n" for line in str(text).splitlines() or [""])


def markdown_escape(text: str) -> str:
    """A table cell in markdown as it is: ``|`` would open a cell, ``<x>`` be read as HTML (the tables use ``<u>``),
    ``*`` and a backtick as emphasis and code, a line break end the row."""
    text = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*").replace("`", "\\`")
    return " ".join(text.replace("<", "&lt;").replace(">", "&gt;").splitlines())


def latex_tabular(header: list[str], body: list[list[str]], right: set[str], raw_cells: bool = False) -> str:
    """A booktabs tabular (needs ``\\usepackage{booktabs}``); ``raw_cells`` keeps markup in numeric cells."""
    spec = "".join("r" if h in right else "l" for h in header)
    lines = [f"\\begin{{tabular}}{{{spec}}}", "\\toprule", " & ".join(latex_escape(h) for h in header) + r" \\", "\\midrule"]

    def cell(h: str, c: str) -> str:
        return c if raw_cells and h in right else latex_escape(c)

    lines += [" & ".join(cell(h, c) for h, c in zip(header, row, strict=True)) + r" \\" for row in body]
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"
