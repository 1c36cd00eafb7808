"""``evaluate(..., label=)`` names every row of the run, a row per dimension and precision among them.

The label was keyed by the model's bare name while a truncated or quantised row is named ``name (dim 64)``, so
``label="lbl", truncate_dim=[32, 16]`` showed ``tiny-bert (dim 32)``...; ``run --label`` patched it in the CLI.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import embench
from embench.cli import app


@pytest.mark.slow
def test_a_label_names_each_dimension_and_precision_row_in_every_format(env, tiny_bert_dir, one_thread):
    common = dict(tasks=["STS13"], progress=False, label="lbl")
    ev = embench.evaluate(str(tiny_bert_dir), truncate_dim=[32, 16], ci=95, resamples=100, **common)
    rows = ["lbl (dim 32)", "lbl (dim 16)"]
    assert list(ev.frame.index) == rows
    assert [r["model"] for r in json.loads(ev.to_json())["rows"]] == rows
    table = ev.render("markdown")
    assert [line.count("[") for line in table.splitlines() if line.startswith(tuple(f"| {r} |" for r in rows))] == [2, 2]
    assert "lbl (dim 16)" in ev.render("csv") and "tiny-bert" not in table + ev.render("csv")
    ev.view = "breakdown"  # every subset's row: under the label too
    assert set(ev.breakdown["model"]) == set(rows) and "tiny-bert" not in ev.render("markdown") + ev.to_json()
    assert list(embench.evaluate(str(tiny_bert_dir), truncate_dim=16, **common).frame.index) == ["lbl (dim 16)"]
    assert list(embench.evaluate(str(tiny_bert_dir), quantize="int8", **common).frame.index) == ["lbl (int8)"]
    assert list(embench.evaluate(str(tiny_bert_dir), **common).frame.index) == ["lbl"]
    assert {r.model for r in ev.records} == {f"{tiny_bert_dir} (dim 32)", f"{tiny_bert_dir} (dim 16)"}  # records keep theirs
    # the command line's --label goes the same way: its rows as the API's
    out = CliRunner().invoke(app, ["run", "-m", str(tiny_bert_dir), "-t", "STS13", "--truncate-dim", "32", "--truncate-dim",
                                   "16", "--label", "lbl", "-q", "-f", "json"])
    assert out.exit_code == 0, out.output
    assert [r["model"] for r in json.loads(out.stdout)["rows"]] == rows
