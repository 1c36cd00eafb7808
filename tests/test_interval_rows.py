"""Intervals of a result that holds several rows (--truncate-dim / --quantize): each row's Avg. from its own records."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

import embench
from embench.cli import app
from embench.evaluation.evaluation_view import Evaluation
from embench.evaluation.items import Items
from embench.evaluation.record_intervals import add_intervals
from embench.evaluation.results import Record
from embench.evaluation.significance import IntervalSettings, average_interval, distributions


def _record(model: str, task: str, items: Items) -> Record:
    return Record(task=task, display=task, kind="sts", model=model, main_score=0.5, scores={},
                  protocol={"aggregation": "all", "correlation": "spearman"}, encoder={})


def test_each_row_gets_the_interval_of_its_own_records_average():
    """The first row's Avg. pooled every row's replicates and the other rows had none."""
    rng = np.random.default_rng(0)
    gold = rng.random(60)
    result, noise = Evaluation(records=[], axis_rows=True), {"m (dim 8)": 2.0, "m (dim 32)": 0.1}
    for row, scale in noise.items():
        for task in ("STS12", "STS16"):
            items = Items("correlation", ["all"], [gold + scale * rng.standard_normal(60)], [gold], task)
            result.records.append(_record(row, task, items))
            result.items[(row, task)] = items
    settings = IntervalSettings(resamples=200)
    add_intervals(result, settings, None)
    for row in noise:
        own = [distributions([r], [result.items[(row, r.task)]], settings)[0] for r in result.records if r.model == row]
        assert result.intervals[(row, "Avg.")] == pytest.approx(average_interval(own, settings.level))
    noisy, clean = (result.intervals[(row, "Avg.")] for row in noise)
    assert noisy[1] - noisy[0] > clean[1] - clean[0]


def test_a_row_missing_a_task_s_items_gets_no_avg_interval_while_the_others_do():
    rng = np.random.default_rng(1)
    gold = rng.random(40)
    result = Evaluation(records=[], axis_rows=True)
    for row in ("m (int8)", "m (binary)"):
        for task in ("STS12", "STS16"):
            items = Items("correlation", ["all"], [gold + rng.standard_normal(40)], [gold], task)
            result.records.append(_record(row, task, items))
            if (row, task) != ("m (binary)", "STS16"):
                result.items[(row, task)] = items
    add_intervals(result, IntervalSettings(resamples=100), None)
    assert ("m (int8)", "Avg.") in result.intervals and ("m (binary)", "Avg.") not in result.intervals


@pytest.mark.slow
def test_run_with_two_dimensions_gives_each_row_its_own_avg_interval(env, tiny_bert_dir, one_thread):
    ev = embench.evaluate(str(tiny_bert_dir), tasks=["STS16", "STS12"], truncate_dim=[8, 32], ci=95, resamples=200)
    rows = list(dict.fromkeys(r.model for r in ev.records))
    assert len(rows) == 2
    for row in rows:
        own = [distributions([r], [ev.items[(row, r.task)]], ev.interval_settings)[0] for r in ev.records if r.model == row]
        assert ev.intervals[(row, "Avg.")] == pytest.approx(average_interval(own, 0.95))
    out = CliRunner().invoke(app, ["run", "-m", str(tiny_bert_dir), "-t", "STS16", "-t", "STS12", "--truncate-dim", "8",
                                   "--truncate-dim", "32", "--ci", "95", "--resamples", "200", "-q", "-f", "json"])
    assert out.exit_code == 0, out.output
    import json

    avg = {row["model"]: (row["Avg. low"], row["Avg. high"]) for row in json.loads(out.stdout)["rows"]}
    assert len(avg) == 2 and all(lo is not None and hi is not None for lo, hi in avg.values()), avg
