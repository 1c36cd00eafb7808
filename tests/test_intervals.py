"""Intervals on every score from the per-item outcomes stored beside each record: no encoding, kept settings."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import embench
from embench.cli import app
from embench.core.errors import EmbenchError
from embench.evaluation.results import ResultStore

TASKS = ["STS16", "STSBenchmark"]


@pytest.mark.slow  # over 1 s: the fast tier stays under a minute
def test_intervals_come_from_stored_items_without_encoding(env, tiny_bert_dir, one_thread):
    ev = embench.evaluate(str(tiny_bert_dir), tasks=TASKS, ci=95)
    model = ev.records[0].model
    for r in ev.records:
        lo, hi = ev.intervals[(model, r.display)]
        assert lo <= r.main_score <= hi and hi - lo > 0.001
        assert r.ci["level"] == 0.95 and r.ci["resamples"] == 1000 and r.ci["seed"] == 1111
        assert r.ci["point_from_items"] == pytest.approx(r.main_score, abs=1e-12)  # the items reproduce the score
        assert r.items["kind"] == "correlation" and r.items["n"] == r.scores["n"]
    lo, hi = ev.intervals[(model, "Avg.")]
    assert lo <= np.mean([r.main_score for r in ev.records]) <= hi
    # A second run reuses the records and their items: no text is encoded, and other settings are kept
    again = embench.evaluate(str(tiny_bert_dir), tasks=TASKS, ci=90, resamples=300, ci_seed=7)
    assert set(again.status.values()) == {"stored"} and again.encode_stats.get("encoded", 0) == 0
    stored = ResultStore().records(task="STS16")[0]
    assert (stored.ci["level"], stored.ci["resamples"], stored.ci["seed"]) == (0.9, 300, 7)
    narrow = again.intervals[(model, "STS16")]
    assert narrow[1] - narrow[0] < ev.intervals[(model, "STS16")][1] - ev.intervals[(model, "STS16")][0]


@pytest.mark.slow  # over 1 s: the fast tier stays under a minute
def test_records_without_usable_items_are_scored_again_when_an_interval_is_asked_for(env, tiny_bert_dir, one_thread, caplog):
    embench.evaluate(str(tiny_bert_dir), tasks=["STS16"])
    store = ResultStore()
    record = store.records(task="STS16")[0]
    store.items_path(record).write_bytes(b"damaged")  # the checksum in the record no longer matches
    ev = embench.evaluate(str(tiny_bert_dir), tasks=["STS16"], ci=95)
    assert ev.status["STS16"] == "computed" and "does not match the checksum" in caplog.text
    path = store.path(record)
    old = json.loads(path.read_text())
    old.pop("items")  # a record written before items were kept
    path.write_text(json.dumps(old))
    assert embench.evaluate(str(tiny_bert_dir), tasks=["STS16"]).status["STS16"] == "stored"  # no interval asked: reused
    assert embench.evaluate(str(tiny_bert_dir), tasks=["STS16"], ci=95).status["STS16"] == "computed"


@pytest.mark.slow  # over 1 s: the fast tier stays under a minute
def test_cli_intervals_in_every_format_and_bad_options(env, tiny_bert_dir, one_thread):
    runner = CliRunner()
    base = ["run", "--model", str(tiny_bert_dir), "--task", "STS16", "-q"]
    csv = runner.invoke(app, [*base, "--ci", "95", "-f", "csv"])
    assert csv.exit_code == 0, csv.output
    assert csv.stdout.splitlines()[0] == "table,model,STS16,STS16 low,STS16 high,Avg.,Avg. low,Avg. high,note"
    md = runner.invoke(app, [*base, "--ci", "95", "-f", "markdown"])
    assert "[" in md.stdout.splitlines()[2] and "95% intervals: percentile bootstrap" in md.stdout
    latex = runner.invoke(app, [*base, "--ci", "95", "-f", "latex"])
    assert "\\scriptsize[" in latex.stdout
    for args, message in (
        (["--ci", "0"], "--ci"), (["--ci", "100"], "--ci"), (["--ci", "95", "--resamples", "0"], "--resamples"),
        (["--resamples", "100"], "give --ci"),
        (["--ci", "95", "--resamples", "1000000000"], "--resamples 1000000000: at most 1,000,000"),  # ran on past SIGTERM
        (["--ci", "95", "--resamples", "1"], "--resamples 1: a 95% interval needs at least 40 resamples"),
        (["--ci", "99", "--resamples", "199"], "--resamples 199: a 99% interval needs at least 200 resamples"),
    ):
        r = runner.invoke(app, [*base, *args])  # main() prints an EmbenchError as one line and exits 2
        assert isinstance(r.exception, EmbenchError) and message in str(r.exception), (args, r.exception)
