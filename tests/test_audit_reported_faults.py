"""Published numbers given to ``embench audit`` (``--reported``, ``--reported-file``, the API's ``reported``): a task
that is not STS crashed with a bare KeyError once every combination was scored, a CSV's second row was dropped in
silence, a task given twice kept its last value, fractions (0.7237) were matched against x100 scores, and a number
printed with one decimal was never matched by our score taken to two. ``audit table`` skipped a short row in silence."""

from __future__ import annotations

import pytest

from embench.audit import reported
from embench.audit.knobs import KNOBS
from embench.audit.protocol import audit
from embench.audit.published_table import check_table
from embench.audit.reported import parse_reported, read_reported_file
from embench.core.errors import EmbenchError

NOT_A_MODEL = "no-such-model-folder"  # every check below happens before a model loads: its name is never read


@pytest.mark.parametrize("text, task", [("STS13=27.45 MR=80", "MR is a transfer task"),
                                        ("STS13=27.45 MTEB:STSBenchmark=30", "MTEB:STSBenchmark is an mteb task")])
def test_a_task_that_is_not_sts_is_refused_before_any_work(text, task):
    with pytest.raises(EmbenchError, match=f"--reported: {task}.*--reported takes the published numbers of STS tasks"):
        parse_reported(text)
    with pytest.raises(EmbenchError, match="reported: MR is a transfer task"):
        audit(NOT_A_MODEL, reported={"STS13": 27.45, "MR": 80.0})


def test_a_reported_file_with_a_second_row_is_refused_naming_its_line(tmp_path):
    f = tmp_path / "two.csv"
    f.write_text("model,STS13,STS-B,SICK-R\nA,18.86,29.08,41.06\nB,27.45,32.09,41.76\n")
    with pytest.raises(EmbenchError, match=r"two\.csv:3: a second row of values: --reported-file takes a header of tasks and one row"):
        read_reported_file(f)
    f.write_text("model,STS13,STS-B,SICK-R\nA,18.86,29.08,41.06\n")
    assert read_reported_file(f) == {"STS13": 18.86, "STSBenchmark": 29.08, "SICKRelatedness": 41.06}


def test_a_task_given_twice_is_refused_naming_both_spellings(tmp_path):
    with pytest.raises(EmbenchError, match=r"--reported: STSBenchmark is given twice, as STS-B=80 and as STSBenchmark=81"):
        parse_reported("STS-B=80 STSBenchmark=81")
    f = tmp_path / "pairs.csv"
    f.write_text("task,value\nSTS12,68.4\nSTS-B,80\nsts12,70.1\n")
    with pytest.raises(EmbenchError, match=r"pairs\.csv:4: STS12 is given twice, as STS12=68.4 at .*pairs\.csv:2 and as sts12=70.1"):
        read_reported_file(f)
    f.write_text("STS-B,STS13,STSBenchmark\n80,70,81\n")
    with pytest.raises(EmbenchError, match=r"pairs\.csv:2: STSBenchmark is given twice, as STS-B=80 and as STSBenchmark=81"):
        read_reported_file(f)
    with pytest.raises(EmbenchError, match=r"reported: STSBenchmark is given twice, as STS-B=80.0 and as STSBenchmark=81"):
        audit(NOT_A_MODEL, reported={"STS-B": 80.0, "STSBenchmark": 81})


def test_numbers_that_all_look_like_fractions_are_refused():
    with pytest.raises(EmbenchError, match=r"--reported: every number is at most 1 \(STS13=0.1886, STSBenchmark=0.2908\): "
                                           r"they look like correlations as fractions.*give them x100"):
        parse_reported("STS13=0.1886 STS-B=0.2908")
    with pytest.raises(EmbenchError, match="reported: every number is at most 1"):
        audit(NOT_A_MODEL, reported={"STS13": 0.1886, "SICK-R": -0.41})
    assert parse_reported("STS13=0.5 STS-B=12.0") == {"STS13": 0.5, "STSBenchmark": 12.0}  # one x100 number: a low score


class _Record:
    def __init__(self, task: str, score: float):
        self.task = task
        self.scores = {agg: {"spearman": score, "pearson": score - 0.05} for agg in KNOBS["aggregation"]}


def test_a_number_printed_with_one_decimal_is_matched_at_one_decimal(monkeypatch):
    ours = {"STS13": 0.1886, "STSBenchmark": 0.2908, "SICKRelatedness": 0.4106}

    def fake_evaluate(model, _view, tasks, on_task=None, **protocol):
        return type("Ev", (), {"records": [_Record(t, ours[t]) for t in tasks]})()

    monkeypatch.setattr(reported, "evaluate", fake_evaluate)

    def best(rep):
        frame = reported.match_reported("m", rep, 0.01, {}, ["correlation"], on_step=lambda _: None)
        return frame.iloc[0]

    for rep in (parse_reported("STS13=18.9 STS-B=29.1 SICK-R=41.1"), {"STS13": 18.9, "STSBenchmark": 29.1, "SICKRelatedness": 41.1}):
        top = best(rep)
        assert top["match"] and top["correlation"] == "spearman" and top["n_within"] == 3, top
    # "18.90" was printed with two decimals: 18.86 is not it, though the float is the same 18.9
    assert best(parse_reported("STS13=18.90 STS-B=29.1 SICK-R=41.1"))["n_within"] == 2
    assert best(parse_reported("STS13=19 STS-B=29 SICK-R=41"))["match"]  # whole numbers: ours rounded to none
    assert not best(parse_reported("STS13=18.8 STS-B=29.1 SICK-R=41.1"))["match"]


SHORT_ROW = ("| Model | STS12 | STS13 | STS14 | Avg. |\n|---|---|---|---|---|\n| A | 70.00 | 80.00 | 90.00 | 80.00 |\n"
             "| short | 70.00 | 80.00 |\n| *unsup* |\n")


def test_a_short_row_of_a_published_table_is_said_not_checked(tmp_path):
    md = tmp_path / "t.md"
    md.write_text(SHORT_ROW)
    assert [(i.row, i.name, i.kind) for i in check_table(md)] == [(4, "short", "unchecked")]  # the heading is no row


@pytest.mark.slow
def test_audit_table_counts_the_rows_it_did_not_check(tmp_path):
    from typer.testing import CliRunner

    from embench.cli import app

    md = tmp_path / "t.md"
    md.write_text(SHORT_ROW)
    out = CliRunner().invoke(app, ["audit", "table", str(md)])
    assert out.exit_code == 0, out.output
    assert "t.md:4: [unchecked] short: 3 cells for the header's 5 columns" in out.output
    assert "0 average(s) off, 0 duplicated value(s), 1 row(s) not checked (fewer cells than the header)" in out.output
