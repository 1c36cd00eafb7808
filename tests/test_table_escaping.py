"""Tables print names as they are in every format: markdown cells escape |, <, * and line breaks; LaTeX guards a
cell starting with [ or * (read as the optional argument of \\\\ or \\midrule), keeps a multi-line note inside its
comment, and prints <, >, | under any font encoding; several paper tables are one CSV that reads back."""

from __future__ import annotations

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
