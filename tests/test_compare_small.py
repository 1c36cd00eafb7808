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
    base = ["compare", "-m", str(tiny_bert_dir), "-m", str(tiny_bert_dir), "--task-file", str(folder / "task.yaml"),
            "--resamples", "100", "-q"]
    out = CliRunner().invoke(app, [*base, "-f", "csv"])
    assert out.exit_code == 0, out.output
    frame = pd.read_csv(io.StringIO(out.stdout))
    assert frame.loc[frame["table"] == "comparison", "p steiger"].isna().all()
    assert frame["note"].str.contains("p steiger is empty for tiny3: Steiger's test needs more than 3 items, got 3").any()
    refused = CliRunner().invoke(app, [*base, "--test", "steiger"])
    assert isinstance(refused.exception, EmbenchError) and "tiny3: --test steiger cannot compare" in str(refused.exception)
