"""CSV output says what it holds: the notes the table prints under it come as rows of their own that read back."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
from scipy import stats as sps

from embench.evaluation.comparison import Side, compare_sides, render_comparison
from embench.evaluation.evaluation_view import Evaluation
from embench.evaluation.items import Items
from embench.evaluation.results import Record
from embench.evaluation.significance import IntervalSettings
from embench.report.tables import csv_with_notes


def _record(model: str, sims: np.ndarray, gold: np.ndarray) -> Record:
    return Record(task="STS16", display="STS16", kind="sts", model=model, main_score=float(sps.spearmanr(sims, gold)[0]),
                  scores={}, protocol={"aggregation": "all", "correlation": "spearman"}, encoder={})


def test_compare_csv_reads_back_with_the_models_the_test_the_bootstrap_and_the_scale():
    """compare -f csv dropped its notes: which model is A, the test, resamples, seed, alpha, x100 scores, raw p."""
    rng = np.random.default_rng(0)
    gold = rng.random(80)
    a, b = gold + 0.3 * rng.standard_normal(80), gold + rng.standard_normal(80)
    sides = [(Side(_record("mini", a, gold), Items("correlation", ["all"], [a], [gold], "d")),
              Side(_record("mpnet", b, gold), Items("correlation", ["all"], [b], [gold], "d")))]
    c = compare_sides(sides, IntervalSettings.parse(90, 200, 5), "permutation", alpha=0.01)
    frame = pd.read_csv(io.StringIO(render_comparison(c, "csv")))  # no comment= nor skiprows: plain CSV
    table, notes = frame[frame["table"] == "comparison"].set_index("task"), frame[frame["table"] == "notes"]["note"]
    assert list(table.index) == ["STS16", "Avg."]
    assert table.loc["STS16", "A"] == round(100 * c.frame.loc["STS16", "A"], 2)  # x100, as the note says
    assert table.loc["STS16", "p permutation"] == c.frame.loc["STS16", "p permutation"]  # raw
    text = " ".join(notes)
    for said in ("A = mini, B = mpnet", "90% intervals", "200 resamples", "seed 5", "the permutation test",
                 "alpha 0.01", "Scores x100 (A, B, diff, diff low, diff high); p-values and n as they are"):
        assert said in text, said


def test_run_csv_with_intervals_says_how_they_were_drawn_and_without_a_note_is_the_plain_table():
    rec = Record(task="STS16", display="STS16", kind="sts", model="m", main_score=0.5, scores={}, protocol={}, encoder={})
    ev = Evaluation(records=[rec], interval_settings=IntervalSettings.parse(95, 300, 7), intervals={("m", "STS16"): (0.4, 0.6)})
    frame = pd.read_csv(io.StringIO(ev.render("csv")))
    scores = frame[frame["table"] == "scores"]
    assert list(scores["model"]) == ["m"] and scores["STS16 low"].tolist() == [40.0]
    assert frame[frame["table"] == "notes"]["note"].str.contains("95% intervals: .*300 resamples, seed 7").tolist() == [True]
    plain = Evaluation(records=[rec]).render("csv")
    assert plain.splitlines()[0] == "model,STS16,Avg." and csv_with_notes(plain, [], "scores") == plain
