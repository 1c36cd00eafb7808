"""An undefined (NaN) score of one ``--model`` stops no other: every model is evaluated, the table of what is
defined is printed, and the undefined ones are named once at the end (status 2)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import embench.api
from embench.cli import app
from embench.core.errors import UndefinedScoreError


def _rec(model: str, task: str, score: float):
    from embench.evaluation.protocols import EvalProtocol
    from embench.evaluation.results import Record

    display = {"STSBenchmark": "STS-B"}.get(task, task)
    return Record(task=task, display=display, kind="sts", model=model, main_score=score, scores={},
                  protocol=EvalProtocol().to_dict(), encoder={})


@pytest.fixture
def evaluated(monkeypatch):
    """``const`` has no STS12 score (constant similarities) but an STS-B one; ``good`` has both."""
    seen = []

    def evaluate(model, suite=None, label=None, **kw):
        seen.append(model)
        if model == "const":
            partial = embench.Evaluation(records=[_rec("const", "STSBenchmark", 0.1)])
            raise UndefinedScoreError("STS12: the score is undefined (nan) under all/spearman; this one is not", partial)
        return embench.Evaluation(records=[_rec(model, "STS12", 0.5), _rec(model, "STSBenchmark", 0.6)])

    monkeypatch.setattr(embench.api, "evaluate", evaluate)
    return seen


@pytest.mark.parametrize("order", [("const", "good"), ("good", "const")])
def test_every_model_is_evaluated_and_the_defined_scores_are_printed(evaluated, order):
    args = ["run", *(a for m in order for a in ("-m", m)), "-t", "STS12", "-t", "STS-B", "-q", "-f", "json"]
    out = CliRunner().invoke(app, args)
    assert evaluated == list(order)  # the model after the undefined one is evaluated too
    assert isinstance(out.exception, UndefinedScoreError), out.output  # main() prints it as one error, status 2
    assert str(out.exception).startswith("const: STS12: the score is undefined") and "good" not in str(out.exception)
    rows = {r["model"]: r for r in json.loads(out.stdout)["rows"]}  # the table first, with every defined score
    assert set(rows) == {"const", "good"}


def test_a_single_model_with_nothing_defined_is_the_error_alone(evaluated, monkeypatch):
    def evaluate(model, suite=None, label=None, **kw):
        raise UndefinedScoreError("STS12: the score is undefined (nan) under all/spearman; this one is not",
                                  embench.Evaluation(records=[]))

    monkeypatch.setattr(embench.api, "evaluate", evaluate)
    out = CliRunner().invoke(app, ["run", "-m", "const", "-t", "STS12", "-q", "-f", "json"])
    assert isinstance(out.exception, UndefinedScoreError) and str(out.exception).startswith("STS12: the score")
    assert not out.stdout  # no table of nothing
