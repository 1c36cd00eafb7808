"""Records of one run stand together in `results show` and `report` when they agree on every protocol axis both are
scored under: STS13 stores ``--sick-split`` at its default (it is not scored under it), so a run of STS13 and SICK-R
with ``--sick-split full`` is one row and one table, with its Avg.; two records that differ on an axis both are
scored under (STS13 by aggregation all and mean) stay apart."""

from __future__ import annotations

import math

import pytest

from embench.cli.commands.results import results_frame
from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.results import Record, ResultStore, record_key
from embench.report.paper import ProtocolMixError, paper_tables
from embench.tasks.record_axes import protocol_axes
from embench.tasks.report_tables import report_tables
from embench.tasks.sts.scored_axes import recorded_sts_protocol

ENCODER = {"fingerprint": "f1", "pooling": "mean", "layer": None, "max_length": None, "dtype": "fp32", "normalize": True,
           "lowercase": False, "prompt": ""}
SPLIT_OPTION = {"STS13": None, "SICKRelatedness": "sick_split", "STSBenchmark": "stsb_split"}
DISPLAY = {"STS13": "STS13", "SICKRelatedness": "SICK-R", "STSBenchmark": "STS-B"}


def rec(task: str, score: float, model: str = "m", **asked) -> Record:
    """A record as a run stores it: the protocol asked, with the axes its task ignores at their defaults."""
    protocol = recorded_sts_protocol(EvalProtocol(**asked), SPLIT_OPTION[task]).to_dict()
    return Record(task=task, display=DISPLAY[task], kind="sts", model=model, main_score=score, scores={},
                  protocol=protocol, encoder=dict(ENCODER), key=record_key(task, ENCODER, protocol))


def test_sick_split_full_and_sts13_are_one_row_with_their_average():
    frame, note, _ = results_frame([rec("STS13", 0.6, sick_split="full"), rec("SICKRelatedness", 0.8, sick_split="full")])
    assert len(frame) == 1 and "sick_split" not in frame.columns
    assert math.isclose(frame.loc[0, "Avg."], 0.7)
    assert "sick_split=full (SICK-R)" in note  # not said of STS13's column


def test_stsb_and_an_aggregation_are_one_row():
    frame, note, _ = results_frame([rec("STS13", 0.6, aggregation="mean"), rec("STSBenchmark", 0.8, aggregation="mean")])
    assert len(frame) == 1 and math.isclose(frame.loc[0, "Avg."], 0.7)
    assert "aggregation=mean (STS13)" in note


def test_a_shared_axis_that_differs_still_splits_rows():
    frame, _, _ = results_frame([rec("STS13", 0.6), rec("STS13", 0.5, aggregation="mean"),
                                 rec("SICKRelatedness", 0.8, sick_split="full")])
    assert list(frame["aggregation"]) == ["all", "mean"]
    assert list(frame["SICK-R"]) == [0.8, 0.8]  # SICK-R has no aggregation: it agrees with both rows


def test_report_makes_one_table_of_them():
    recs = [rec("STS13", 0.6, sick_split="full"), rec("SICKRelatedness", 0.8, sick_split="full")]
    with pytest.raises(ProtocolMixError):  # every axis of the kind compared, as before: the mix refused
        paper_tables(recs)
    (table,) = paper_tables(recs, axes_of=protocol_axes)
    assert list(table.frame.columns) == ["STS13", "SICK-R", "Avg."] and math.isclose(table.frame.iloc[0]["Avg."], 0.7)
    assert table.protocol["sick_split"] == "full" and "sick_split=full (SICK-R)" in table.note()


def test_report_keeps_records_that_differ_on_a_shared_axis_apart():
    recs = [rec("STS13", 0.6), rec("STS13", 0.5, aggregation="mean"), rec("SICKRelatedness", 0.8)]
    with pytest.raises(ProtocolMixError, match="differ in aggregation"):
        paper_tables(recs, axes_of=protocol_axes)
    tables = paper_tables(recs, axes_of=protocol_axes, split="tables")
    assert [t.protocol["aggregation"] for t in tables] == ["all", "mean"]
    assert [t.frame.iloc[0]["SICK-R"] for t in tables] == [0.8, 0.8]


def test_report_tables_read_from_a_folder_group_them(tmp_path):
    store = ResultStore(tmp_path)
    for r in (rec("STS13", 0.6, sick_split="full"), rec("SICKRelatedness", 0.8, sick_split="full")):
        store.save(r)
    (table,), problems = report_tables([tmp_path])
    assert not problems and list(table.frame.columns) == ["STS13", "SICK-R", "Avg."]


@pytest.mark.slow  # a tiny model's run of two tasks
def test_a_run_with_sick_split_full_shows_and_reports_as_it_ran(env, tiny_bert_dir):
    from typer.testing import CliRunner

    from embench.cli import app

    runner = CliRunner()
    ran = runner.invoke(app, ["run", "-m", str(tiny_bert_dir), "-t", "STS13", "-t", "SICK-R", "--sick-split", "full", "-q"])
    assert ran.exit_code == 0, ran.output
    shown = runner.invoke(app, ["results", "show", "--format", "csv"])
    lines = shown.stdout.splitlines()
    assert shown.exit_code == 0 and "table,model,STS13,SICK-R,Avg.,note" in lines, shown.output
    assert len([line for line in lines if line.startswith("scores,")]) == 1  # one row, its Avg. filled in
    assert "sick_split=full (SICK-R)" in shown.stdout
    report = runner.invoke(app, ["report", "-f", "markdown"])
    assert report.exit_code == 0, report.output
    assert "Avg." in report.stdout and "sick_split=full (SICK-R)" in report.stdout
