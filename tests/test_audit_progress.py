"""Issue 36, item 10: no audit step is silent for minutes. Matching reported numbers (a dozen protocol
combinations, each STS-B/SICK-R regressor trained for tens of seconds on a CPU) says each combination and each
regressor as it goes; the regressor variant says it is training before it starts."""

from __future__ import annotations

import pytest

from embench.audit import reported
from embench.audit.knobs import KNOBS


class _Record:
    def __init__(self, task: str):
        self.task = task
        self.scores = {agg: {"spearman": 0.5, "pearson": 0.5} for agg in KNOBS["aggregation"]}


class _Evaluation:
    def __init__(self, records):
        self.records = records


def _fake_evaluate(model, _view, tasks, on_task=None, **protocol):
    records = [_Record(t) for t in tasks]
    for r in records:
        if on_task is not None:
            on_task(r.task, "computed", r)
    return _Evaluation(records)


def test_matching_says_each_combination_and_each_regressor_it_trains(monkeypatch):
    monkeypatch.setattr(reported, "evaluate", _fake_evaluate)
    lines: list[str] = []
    frame = reported.match_reported("m", {"STS12": 50.0, "STSBenchmark": 50.0}, 0.01, {}, list(KNOBS), on_step=lines.append)
    n = 12  # text x SICK-R split x similarity x scoring, less the regressor on SICK-R's full split
    assert lines[0].startswith(f"matching the reported numbers: {n} protocol combination(s)")
    starts = [x for x in lines if x.startswith("matching [") and ("scoring=" in x)]
    assert [x.split("]")[0] for x in starts] == [f"matching [{i}/{n}" for i in range(1, n + 1)]
    regressors = [x for x in starts if "scoring=regressor" in x]
    assert regressors and all("regressor is trained unless its record is stored" in x for x in regressors)
    done = [x for x in lines if "STSBenchmark: computed" in x]
    assert len(done) == len(regressors)  # a line per regressor trained, none for the cosine-scored tasks
    assert not any("STS12: computed" in x for x in lines)
    assert lines[-1].startswith(f"matching: {n} combination(s) in")
    assert len(frame) == n * len(KNOBS["aggregation"]) * len(KNOBS["correlation"])


def test_matching_outside_the_cli_reports_on_stderr_when_progress_is_on(monkeypatch, capsys):
    monkeypatch.setattr(reported, "evaluate", _fake_evaluate)
    reported.match_reported("m", {"STS12": 50.0}, 0.01, {"progress": True}, ["text"])
    assert "matching [2/2] text=raw" in capsys.readouterr().err
    reported.match_reported("m", {"STS12": 50.0}, 0.01, {"progress": False}, ["text"])
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_the_regressor_variant_says_it_trains_before_it_starts(tiny_bert_dir, data_root, tmp_path, one_thread):
    from embench.audit.protocol import audit

    steps: list[str] = []
    audit(str(tiny_bert_dir), knobs=["scoring"], tasks=["STSBenchmark"], data=data_root, results_dir=tmp_path / "r",
          cache_dir=tmp_path / "c", device="cpu", on_step=steps.append)
    start = next(i for i, s in enumerate(steps) if "scoring=regressor: training SentEval's regressor" in s)
    trained = next(i for i, s in enumerate(steps) if "scoring=regressor: STSBenchmark: computed" in s)
    end = next(i for i, s in enumerate(steps) if "scoring=regressor: done" in s)
    assert start < trained < end
