"""A stored record holding a number no float can hold (an edited file: ``1`` and 400 zeros, or an integer past
Python's 4300 digits) is a damaged record like any other: named once and computed again by a run, named and skipped
by a listing and a report; never an OverflowError or a ValueError traceback."""

from __future__ import annotations

import json

import pytest

from embench.core.errors import EmbenchError
from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.record_checks import score_problem
from embench.evaluation.results import Record, ResultStore, record_key

HUGE = "1" + "0" * 400  # parses as an int; float() of it overflows
TOO_LONG = "1" + "0" * 5000  # past int's 4300-digit limit: json.loads raises ValueError


def _raw(main: float = 0.55, task: str = "STS12") -> dict:
    proto, enc = EvalProtocol().to_dict(), {"fingerprint": "f", "pooling": "mean", "layer": None, "max_length": 128, "dtype": "fp32"}
    scores = {"subsets": {"a": {"n": 3, "pearson": 0.5, "spearman": 0.55}}, "all": {"pearson": 0.5, "spearman": 0.55},
              "mean": {"pearson": 0.5, "spearman": 0.55}, "wmean": {"pearson": 0.5, "spearman": 0.55}}
    return {"task": task, "display": task, "kind": "sts", "model": "m", "main_score": main, "scores": scores,
            "protocol": proto, "encoder": enc, "provenance": {}, "key": record_key(task, enc, proto)}


def _damage(path, where: str, number: str) -> None:
    """Put ``number`` (digits, not a JSON float) in place of the value at ``where`` in the record file."""
    raw = json.loads(path.read_text())
    keys = where.split("/")
    node = raw
    for k in keys[:-1]:
        node = node[k]
    node[keys[-1]] = "@@"
    path.write_text(json.dumps(raw).replace('"@@"', number))


@pytest.mark.parametrize(("where", "number", "said"), [
    ("main_score", HUGE, r"main score 100000000000\.\.\. \(401 characters\) is not a finite fraction"),
    ("main_score", TOO_LONG, r"cannot read it \(ValueError\)"),
    ("scores/all/spearman", HUGE, "a number too large for a float"),
    ("scores/subsets/a/n", HUGE, "a number too large for a float"),
])
def test_a_record_with_an_oversized_number_is_named_and_computed_again(tmp_path, where, number, said):
    store = ResultStore(tmp_path)
    raw = _raw()
    path = store.save(Record.from_dict(raw))
    _damage(path, where, number)
    with pytest.warns(UserWarning, match=said + ".*it is computed again"):
        assert store.find("m", "STS12", raw["key"]) is None


def test_the_checks_of_a_scores_table_never_overflow():
    raw = _raw()
    raw["scores"]["subsets"]["a"]["pearson"] = int(HUGE)
    assert score_problem(raw) == "it holds a number too large for a float"
    assert score_problem(_raw()) is None


@pytest.mark.slow  # the report command's imports
def test_a_listing_and_a_report_skip_a_record_with_an_oversized_number(tmp_path):
    from typer.testing import CliRunner

    from embench.cli import app
    from embench.evaluation.scan import scan_results

    store = ResultStore(tmp_path)
    good = store.save(Record.from_dict(_raw(task="STS12")))
    bad = store.save(Record.from_dict(_raw(task="STS13")))
    _damage(bad, "main_score", TOO_LONG)
    records, problems = scan_results([tmp_path])
    assert [r.task for r in records] == ["STS12"] and [p for p, _ in problems] == [bad]
    out = CliRunner().invoke(app, ["report", "--results", str(tmp_path), "-f", "markdown"])
    assert out.exit_code == 0 and "STS12" in out.stdout and "STS13" not in out.stdout, out.output
    _damage(good, "main_score", HUGE)
    out = CliRunner().invoke(app, ["report", "--results", str(tmp_path), "-f", "markdown"])
    assert isinstance(out.exception, EmbenchError) and str(bad) in str(out.exception) and str(good) in str(out.exception)
