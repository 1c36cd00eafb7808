"""`compare` where Steiger's test is undefined (3 pairs, a perfect or undefined correlation): an empty column with
its reason under the bootstrap and permutation tests, a clear refusal under --test steiger."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from typer.testing import CliRunner

from embench.cli import app
from embench.core.errors import EmbenchError
from embench.evaluation.comparison import Side, compare_sides
from embench.evaluation.items import Items
from embench.evaluation.results import Record
from embench.evaluation.significance import IntervalSettings


def _side(model: str, sims, gold) -> Side:
    sims, gold = np.asarray(sims, float), np.asarray(gold, float)
    rec = Record(task="tiny", display="tiny", kind="sts", model=model, main_score=float(sps.spearmanr(sims, gold)[0]),
                 scores={}, protocol={"aggregation": "all", "correlation": "spearman"}, encoder={})
    return Side(rec, Items("correlation", ["all"], [sims], [gold], "d"))


GOLD = [0.1, 0.5, 0.9, 0.3, 0.7]
CASES = {  # why Steiger's test has no p-value -> (A's similarities, B's, gold)
    "needs more than 3 items, got 3": ([0.2, 0.4, 0.8], [0.3, 0.1, 0.5], GOLD[:3]),
    "undefined for a perfect correlation": (GOLD, [0.3, 0.1, 0.5, 0.9, 0.2], GOLD),
    "a Pearson correlation is undefined": ([0.5] * 5, [0.3, 0.1, 0.5, 0.9, 0.2], GOLD),
}


@pytest.mark.parametrize("why", CASES)
def test_the_informational_steiger_column_is_empty_with_its_reason(why):
    """A raw ValueError traceback whatever --test: compare always ran Steiger's test."""
    a, b, gold = CASES[why]
    for test in ("bootstrap", "permutation"):
        c = compare_sides([(_side("A", a, gold), _side("B", b, gold))], IntervalSettings(resamples=100), test)
        assert np.isnan(c.frame.loc["tiny", "p steiger"]) and np.isfinite(c.frame.loc["tiny", f"p {test}"])
        assert any(n.startswith("p steiger is empty for tiny: ") and why in n for n in c.notes), c.notes
    with pytest.raises(EmbenchError, match=f"^tiny: --test steiger cannot compare this task: .*{why}.*; use --test bootstrap"):
        compare_sides([(_side("A", a, gold), _side("B", b, gold))], IntervalSettings(resamples=100), "steiger")


@pytest.mark.slow
def test_cli_compare_of_a_three_pair_task(env, tiny_bert_dir, one_thread, task_registry_restored):
    folder = env / "tiny3"
    folder.mkdir()
    rows = [("A man plays a guitar.", "A man plays music.", "4.2"), ("A cat sleeps.", "A dog runs fast.", "0.8"),
            ("Rain falls on the town.", "It is raining in town.", "4.6")]
    (folder / "pairs.tsv").write_text("sentence1\tsentence2\tscore\n" + "".join("\t".join(r) + "\n" for r in rows),
                                      encoding="utf-8")
    (folder / "task.yaml").write_text("name: tiny3\nkind: pairs\nfiles: pairs.tsv\nscore_range: [0, 5]\n", encoding="utf-8")
    base = ["compare", "-m", str(tiny_bert_dir), "-m", str(tiny_bert_dir), "--set-b", "pooling=mean",  # not itself: refused
            "--task-file", str(folder / "task.yaml"),
            "--resamples", "100", "-q"]
    out = CliRunner().invoke(app, [*base, "-f", "csv"])
    assert out.exit_code == 0, out.output
    frame = pd.read_csv(io.StringIO(out.stdout))
    assert frame.loc[frame["table"] == "comparison", "p steiger"].isna().all()
    assert frame["note"].str.contains("p steiger is empty for tiny3: Steiger's test needs more than 3 items, got 3").any()
    refused = CliRunner().invoke(app, [*base, "--test", "steiger"])
    assert isinstance(refused.exception, EmbenchError) and "tiny3: --test steiger cannot compare" in str(refused.exception)


def test_a_spearman_comparison_says_that_p_steiger_tests_pearson_and_where_the_differences_disagree_in_sign():
    """p steiger (Pearson, all pairs) sat unexplained beside a Spearman diff whose sign it could contradict: on STS-B,
    MiniLM with and without 'query: ' differ by -0.14 in Spearman and +0.70 in Pearson (Steiger p 0.099, bootstrap 0.81)."""
    gold = np.arange(10.0)
    a = np.exp(gold)  # monotone in gold: Spearman 1, Pearson well below
    b = gold.copy()
    b[[3, 4]] = b[[4, 3]]  # linear with one swap: Spearman and Pearson just below 1
    spearman_diff = 1.0 - sps.spearmanr(b, gold)[0]  # > 0
    pearson_diff = np.corrcoef(a, gold)[0, 1] - np.corrcoef(b, gold)[0, 1]  # < 0
    assert spearman_diff > 0 > pearson_diff
    for test in ("bootstrap", "permutation", "steiger"):
        c = compare_sides([(_side("A", a, gold), _side("B", b, gold))], IntervalSettings(resamples=100), test)
        note = [n for n in c.notes if n.startswith("p steiger tests Pearson's r on all pairs pooled")]
        assert len(note) == 1, c.notes
        assert f"other sign on tiny ({100 * pearson_diff:+.2f} against {100 * spearman_diff:+.2f})" in note[0]
    same_sign = compare_sides([(_side("A", gold + 0.1 * np.sin(gold), gold), _side("B", b, gold))], IntervalSettings(resamples=100))
    assert any("can disagree with them." in n for n in same_sign.notes) and not any("other sign" in n for n in same_sign.notes)
    pearson = [_side(m, s, gold) for m, s in (("A", a), ("B", b))]
    for side in pearson:
        side.record.protocol["correlation"] = "pearson"
        side.record.main_score = float(np.corrcoef(side.items.values[0], gold)[0, 1])
    assert not any("p steiger tests" in n for n in compare_sides([tuple(pearson)], IntervalSettings(resamples=100)).notes)
