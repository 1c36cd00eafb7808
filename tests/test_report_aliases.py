"""An alias and its hub id (all-MiniLM-L6-v2, sentence-transformers/all-MiniLM-L6-v2) of the same weights are one row
in `report`, as they are in `results show`: not two identical rows."""

from __future__ import annotations

from embench.cli.commands.results import results_frame
from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.results import Record, ResultStore, record_key
from embench.tasks.report_tables import report_tables

ENCODER = {"fingerprint": "f1", "pooling": "mean", "layer": None, "max_length": None, "dtype": "fp32", "normalize": True,
           "lowercase": False, "prompt": ""}


def rec(model: str, task: str, score: float) -> Record:
    protocol = EvalProtocol().to_dict()
    return Record(task=task, display=task, kind="sts", model=model, main_score=score, scores={}, protocol=protocol,
                  encoder=dict(ENCODER), key=record_key(task, ENCODER, protocol))


def test_report_and_results_show_make_one_row_of_an_alias_and_its_hub_id(tmp_path):
    recs = [rec("all-MiniLM-L6-v2", "STS12", 0.7), rec("sentence-transformers/all-MiniLM-L6-v2", "STS13", 0.8)]
    store = ResultStore(tmp_path)
    for r in recs:
        store.save(r)
    (table,), _ = report_tables([tmp_path])
    assert list(table.frame.index) == ["all-MiniLM-L6-v2"] and list(table.frame.columns) == ["STS12", "STS13", "Avg."]
    (named,), _ = report_tables([tmp_path], models=["sentence-transformers/all-MiniLM-L6-v2"],
                                names={"sentence-transformers/all-MiniLM-L6-v2": "MiniLM"})
    assert list(named.frame.index) == ["MiniLM"]
    frame, _, _ = results_frame(recs)
    assert list(frame["model"]) == ["all-MiniLM-L6-v2"]
