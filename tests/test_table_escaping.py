"""Tables print names as they are in every format: markdown cells escape |, <, * and line breaks; LaTeX guards a
cell starting with [ or * (read as the optional argument of \\\\ or \\midrule), keeps a multi-line note inside its
comment, and prints <, >, | under any font encoding; several paper tables are one CSV that reads back."""

from __future__ import annotations

import dataclasses
import io
import re

import pandas as pd

from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.results import Record
from embench.report.paper import paper_tables
from embench.report.paper_render import render_tables, to_latex
from embench.report.tables import latex_escape, render

NAMES = ["p|q", "<x> *y*", "[ours] tiny", "*star"]


def _frame() -> pd.DataFrame:
    frame = pd.DataFrame({"STS12": [0.71, 0.72, 0.73, 0.74]}, index=NAMES)
    frame.index.name = "model"
    return frame


def test_markdown_cells_keep_one_cell_per_column_and_show_names_literally():
    text = render(_frame(), "markdown", title="a | b", note="prompt=Q:\n{text}", highlight=True)
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert all(len(re.split(r"(?<!\\)\|", r)) == 4 for r in rows)  # two cells: | model | STS12 |
    assert r"p\|q" in text and "&lt;x&gt; \\*y\\*" in text and "**74.00**" in text  # the mark still bold
    assert "prompt=Q: {text}" in text  # the note on one line


def test_latex_cells_starting_with_a_bracket_or_star_are_guarded():
    assert latex_escape("[ours] tiny") == "{}[ours] tiny" and latex_escape("*star") == "{}*star"
    assert latex_escape("p|q <x>") == r"p\textbar{}q \textless{}x\textgreater{}"
    text = render(_frame(), "latex")
    for line in text.splitlines():
        assert not re.match(r"\s*[\[*]", line)  # no line (a row after \\ or \midrule) starts with [ or *


def test_a_multi_line_note_stays_inside_the_latex_comment():
    text = render(_frame(), "latex", title="t", note="shared by every row: prompt={text}\n\\input{/etc/hostname}")
    assert "% \\input{/etc/hostname}" in text
    assert all(line.startswith("%") or line.startswith("\\") or "&" in line for line in text.splitlines() if line)


def _rec(model: str, task: str, score: float, kind: str = "sts", **protocol) -> Record:
    return Record(task=task, display=task, kind=kind, model=model, main_score=score, scores={},
                  protocol={**EvalProtocol().to_dict(), **protocol}, encoder={"pooling": "mean"})


def test_paper_latex_guards_row_labels():
    tables = paper_tables([_rec("[ours] tiny", "STS12", 0.7), _rec("base", "STS12", 0.6)])
    body = to_latex(tables[0])
    assert "{}[ours] tiny &" in body


def test_several_paper_tables_are_one_csv_that_reads_back():
    recs = [_rec("m", "STS12", 0.7), _rec("m", "STS12", 0.6, correlation="pearson"), _rec("m", "MR", 0.8, kind="transfer")]
    tables = paper_tables(recs, split="tables")
    assert len(tables) == 3
    frame = pd.read_csv(io.StringIO(render_tables(tables, "csv")))
    assert list(frame.columns[:2]) == ["Model", "kind"] and "correlation" in frame and "MR" in frame
    sts = frame[frame["kind"] == "sts"].set_index("correlation")["STS12"]
    assert sts["spearman"] == 70.0 and sts["pearson"] == 60.0
    assert frame.loc[frame["kind"] == "transfer", "MR"].item() == 80.0
    assert tables[2].caption.endswith("1 transfer task")


def test_the_same_results_give_the_same_html():
    from embench.report.paper_render import to_html

    recs = [_rec("a", "STS12", 0.5), _rec("b", "STS12", 0.6)]
    assert to_html(paper_tables(recs)[0]) == to_html(paper_tables(list(recs))[0])


def test_split_tables_in_html_have_their_own_ids_marks_and_captions():
    """``--split tables -f html``: a Pearson and a Spearman table of the same models and tasks had the same caption
    and the same element ids (hashed from caption, columns and rows only), so each table's bold/underline CSS was
    applied to the other's cells too. Ids now hash the note (protocol) and the position; captions name the protocol."""
    scores = {"A": (0.5, 0.6, 0.7, 0.4), "B": (0.6, 0.5, 0.4, 0.7), "C": (0.4, 0.4, 0.5, 0.5)}
    recs = [r for m, (a, b, c, d) in scores.items() for r in (
        _rec(m, "STS-B", a), _rec(m, "SICK-R", b), _rec(m, "STS-B", c, correlation="pearson"), _rec(m, "SICK-R", d, correlation="pearson"))]
    tables = paper_tables(recs, split="tables")
    assert [t.caption for t in tables] == ["Results of 3 models on 2 STS tasks (correlation=pearson)",
                                           "Results of 3 models on 2 STS tasks (correlation=spearman)"]
    tables = [dataclasses.replace(t, caption="T") for t in tables]  # --caption T: one caption again
    page = render_tables(tables, "html")
    ids = re.findall(r'<table id="(T_t[0-9a-f]+)"', page)
    assert len(ids) == 2 and ids[0] != ids[1]
    bold = {cell for block in re.findall(r"([^{}]*)\{\s*font-weight: bold;", page)
            for cell in re.findall(r"#(T_t[0-9a-f]+)_row(\d)_col(\d)", block)}
    best = {(uid, str(i), str(j)) for uid, t in zip(ids, tables, strict=True)
            for j, c in enumerate(t.frame.columns) for i, v in enumerate(t.frame[c]) if v == t.frame[c].max()}
    assert bold == best  # each table's bold cells are its own best


def test_html_escapes_task_names_in_the_column_headings():
    """``-f html`` escaped row labels and the caption but not the column headings: a task displayed as
    ``Q&A <v2>|100% #1_x $`` opened an element ``<v2>`` in the page."""
    from embench.report.paper_render import to_html

    name = "Q&A <v2>|100% #1_x $"
    text = to_html(paper_tables([_rec("a", name, 0.5), _rec("b", name, 0.6)])[0])
    assert "<v2>" not in text and ">Q&amp;A &lt;v2&gt;|100% #1_x $</th>" in text
