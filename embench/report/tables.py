"""Result tables as papers print them: tasks as columns, then Avg.; scores x100, two decimals."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence

import pandas as pd

from ..results import Record

FORMATS = ("table", "json", "csv", "markdown", "latex")


def summary_frame(records: Sequence[Record]) -> pd.DataFrame:
    """One row per model, one column per task (display name, in first-seen order), then ``Avg.``.

    Values are the main scores as fractions; ``Avg.`` is recomputed from the cells, and left empty
    for a row that misses a task.
    """
    columns: list[str] = []
    rows: dict[str, dict[str, float]] = {}
    for r in records:
        if r.display not in columns:
            columns.append(r.display)
        rows.setdefault(r.model, {})[r.display] = r.main_score
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


def render(frame: pd.DataFrame, fmt: str, scaled: Sequence[str] | None = None, title: str | None = None) -> str:
    """Render a frame; columns in ``scaled`` (default: every float column) are shown x100."""
    if scaled is None:
        scaled = [c for c in frame.columns if pd.api.types.is_float_dtype(frame[c])]
    if fmt == "json":
        return frame.reset_index().to_json(orient="records", indent=2) if frame.index.name else frame.to_json(orient="records", indent=2)
    header, body = _cells(frame, scaled)
    if fmt == "csv":
        buf = io.StringIO()
        pd.DataFrame(body, columns=header).to_csv(buf, index=False)
        return buf.getvalue()
    if fmt == "markdown":
        right = [i for i, h in enumerate(header) if h in scaled or h == "n"]
        sep = ["---:" if i in right else "---" for i in range(len(header))]
        lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        return "\n".join(lines) + "\n"
    if fmt == "latex":
        return latex_tabular(header, body, right={h for h in header if h in scaled or h == "n"})
    if fmt == "table":
        from rich.console import Console
        from rich.table import Table

        table = Table(title=title)
        for h in header:
            table.add_column(h, justify="right" if h in scaled or h == "n" else "left", style="bold" if h == "Avg." else None)
        for r in body:
            table.add_row(*r)
        console = Console(file=io.StringIO(), width=max(100, 12 * len(header)), force_terminal=False)
        console.print(table)
        return console.file.getvalue()
    raise ValueError(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")


_LATEX_ESCAPES = {"&": r"\&", "%": r"\%", "_": r"\_", "#": r"\#", "$": r"\$"}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_ESCAPES.get(ch, ch) for ch in text)


def latex_tabular(header: list[str], body: list[list[str]], right: set[str]) -> str:
    """A booktabs tabular (needs ``\\usepackage{booktabs}``)."""
    spec = "".join("r" if h in right else "l" for h in header)
    lines = [f"\\begin{{tabular}}{{{spec}}}", "\\toprule", " & ".join(latex_escape(h) for h in header) + r" \\", "\\midrule"]
    lines += [" & ".join(latex_escape(c) for c in row) + r" \\" for row in body]
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def records_json(records: Sequence[Record]) -> str:
    return json.dumps([r.to_dict() for r in records], indent=2, default=str)
