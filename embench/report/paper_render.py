"""A :class:`~embench.report.paper.PaperTable` as papers print it: LaTeX through pandas'
``Styler.to_latex`` (booktabs rules, best bold, second underlined), HTML through ``Styler.to_html``,
markdown and CSV through :func:`embench.report.tables.render`.

Scores are shown x100 with two decimals; the ranks come from :func:`embench.report.tables.ranks`, so
ties and lower-is-better columns are handled the same in every format.
"""

from __future__ import annotations

import hashlib
import html

import pandas as pd

from .formats import REPORT_FORMATS as TABLE_FORMATS  # noqa: E402
from .paper import PaperTable
from .tables import latex_escape, ranks, render, stacked_csv

# Styler's LaTeX "CSS": ``command: --rwrap`` wraps a cell as ``\command{cell}``.
LATEX_MARKS = {1: "textbf: --rwrap;", 2: "underline: --rwrap;"}
HTML_MARKS = {1: "font-weight: bold;", 2: "text-decoration: underline;"}
# narrow margins: a table of the seven STS tasks with Avg. is wider than article's default text width
# the default font encoding (T1 without cm-super falls back to bitmap fonts); <, > and | are escaped to print there
LATEX_PREAMBLE = "\\documentclass{article}\n\\usepackage[margin=1.5cm]{geometry}\n\\usepackage{booktabs}\n\\begin{document}\n"


def _styled(table: PaperTable, marks: dict[int, str], corner: str | None = None):
    """``corner``: the header's first cell (HTML: the column axis' name is printed there, where the index's name
    would take a header row of its own)."""
    frame = table.frame * 100
    frame = frame.rename_axis(None).rename_axis(corner, axis=1)  # the index name in the header's first cell (see to_latex)
    rank = ranks(table.frame, list(table.frame.columns), lower=table.lower_is_better, groups=table.groups())
    css = pd.DataFrame("", index=frame.index, columns=frame.columns)
    if len(frame) > 1:
        for (i, c), r in rank.items():
            css.iloc[i, list(frame.columns).index(c)] = marks[r]
    return frame.style.format("{:.2f}", na_rep="--").apply(lambda _: css, axis=None)


def to_latex(table: PaperTable, label: str | None = None) -> str:
    """A ``table`` float: caption, booktabs tabular, and the protocol footnote under it."""
    styler = _styled(table, LATEX_MARKS)
    # embench's escaping, not pandas': it also guards a label starting with "[" (read as \\'s optional argument)
    styler = styler.format_index(lambda v: latex_escape(str(v)), axis=0).format_index(lambda v: latex_escape(str(v)), axis=1)
    body = styler.to_latex(hrules=True, caption=latex_escape(table.caption), label=label, position_float="centering",
                           column_format="l" + "r" * len(table.frame.columns), position="t")
    # pandas puts the index name on a row of its own; papers put it in the header's first cell
    name = latex_escape(str(table.frame.index.name or ""))
    body = body.replace("\\toprule\n & ", f"\\toprule\n{name} & ", 1)
    note = f"\\par\\smallskip\\parbox{{\\linewidth}}{{\\footnotesize {latex_escape(table.note())}}}\n"
    return body.replace("\\end{table}", note + "\\end{table}")


def latex_document(tables: list[PaperTable]) -> str:
    """A document pdflatex compiles as it is (article + booktabs), one float per table."""
    return LATEX_PREAMBLE + "\n".join(to_latex(t) for t in tables) + "\\end{document}\n"


def to_html(table: PaperTable, position: int = 0) -> str:
    """A ``<table>`` with its caption, best bold, second underlined, and the protocol note under it; ``position``
    is the table's place on its page."""
    # "Model" in the corner, as LaTeX and markdown print it (it was left blank)
    styler = _styled(table, HTML_MARKS, html.escape(str(table.frame.index.name or "")) or None).set_caption(html.escape(table.caption))
    # task names are headings too: "Q&A <v2>" printed, not an element <v2> opened
    styler = styler.format_index(escape="html", axis=0).format_index(escape="html", axis=1)
    # ids from the table itself, not pandas' random ones: the same results give the same page. The note (protocol,
    # encoders) and the position are in it: two tables of one caption, tasks and rows (--split tables: a Pearson and
    # a Spearman table) shared their ids, so each one's bold and underline fell on the other's cells too
    key = f"{position}|{table.caption}|{list(table.frame.columns)}|{list(table.frame.index)}|{table.note()}"
    uid = hashlib.sha256(key.encode()).hexdigest()[:8]
    styler = styler.set_table_attributes('class="paper"').set_uuid(f"t{uid}")
    return styler.to_html() + f'<p class="note">{html.escape(table.note())}</p>\n'


def render_tables(tables: list[PaperTable], fmt: str, standalone: bool = False) -> str:
    """All tables in one format; LaTeX as bare floats, or a compilable document when ``standalone``."""
    if fmt == "latex":
        return latex_document(tables) if standalone else "\n".join(to_latex(t) for t in tables)
    if fmt == "html":
        from .html_page import page

        shown = [to_html(t, i) for i, t in enumerate(tables)]
        return page("embench report", [("table", t) for t in shown]) if standalone else "\n".join(shown)
    if fmt == "csv":
        return tables_csv(tables)
    if fmt == "markdown":
        return "\n".join(render(t.frame.copy(), "markdown", title=t.caption, highlight=True, note=t.note(),
                                lower=t.lower_is_better, groups=t.groups()) for t in tables)
    raise ValueError(f"unknown table format {fmt!r}; choose one of: {', '.join(TABLE_FORMATS)}")


def tables_csv(tables: list[PaperTable]) -> str:
    """One CSV whatever the number of tables: one table as it is; several (STS and transfer, or ``--split tables``)
    as one long table whose ``kind`` and protocol columns say which rows belong together, where CSV blocks joined
    by blank lines read back as one garbled table."""
    if len(tables) == 1:
        return render(tables[0].frame.copy(), "csv")
    scores = list(dict.fromkeys(c for t in tables for c in t.frame.columns if c != "Avg."))
    axes = [a for a in dict.fromkeys(a for t in tables for a in t.protocol)  # those that tell the tables apart
            if len({str(t.protocol.get(a)) for t in tables}) > 1]
    columns = ["kind", *axes, *scores, *(["Avg."] if any("Avg." in t.frame for t in tables) else [])]
    parts = [t.frame.assign(kind=t.kind, **{a: t.protocol.get(a) for a in axes}).reindex(columns=columns) for t in tables]
    return stacked_csv([({}, render(part, "csv", scaled=[*scores, "Avg."])) for part in parts])
