"""What `report` and `results export` read once however many records there are: the results folders (`report --name`
scanned them a second time for its unused-name check) and mteb's package version (read per record exported)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from embench.cli import app
from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.results import Record, ResultStore, record_key

ENCODER = {"fingerprint": "f1", "pooling": "mean", "layer": None, "max_length": None, "dtype": "fp32", "normalize": True,
           "lowercase": False, "prompt": ""}


def rec(task: str, score: float) -> Record:
    protocol = EvalProtocol().to_dict()
    return Record(task=task, display=task, kind="sts", model="m", main_score=score, scores={}, protocol=protocol,
                  encoder=dict(ENCODER), key=record_key(task, ENCODER, protocol))


@pytest.mark.slow  # a CLI report
def test_report_with_a_name_reads_each_record_once(tmp_path, monkeypatch):
    import embench.evaluation.scan as scan

    store = ResultStore(tmp_path)
    store.save(rec("STS12", 0.5))
    checked = []
    real = scan.record_problem
    monkeypatch.setattr(scan, "record_problem", lambda raw, *a, **k: checked.append(raw["task"]) or real(raw, *a, **k))
    r = CliRunner().invoke(app, ["report", "--results-dir", str(tmp_path), "-f", "markdown", "--name", "m=Ours",
                                 "--name", "other=Theirs"])
    assert r.exit_code == 0, r.output
    assert "Ours" in r.stdout and "other" in r.output  # the unused name is still said
    assert checked == ["STS12"]


@pytest.mark.slow  # imports mteb
def test_the_mteb_version_is_read_once_for_every_record(monkeypatch):
    from embench.tasks.mteb import own_results

    asked = []
    real = own_results.metadata.version
    monkeypatch.setattr(own_results.metadata, "version", lambda name: asked.append(name) or real(name))
    own_results.mteb_version.cache_clear() if hasattr(own_results, "mteb_version") else None
    for task in ("STS12", "STS13", "STS14"):
        own_results.own_task_result(rec(task, 0.5))
    assert asked.count("mteb") <= 1
