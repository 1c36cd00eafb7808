"""Protocols that give one record for a task are one cell of the grid: counted once, run once."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from embench.cli.app import app


@pytest.mark.slow
def test_protocols_that_collapse_for_a_task_are_one_cell_and_a_finished_grid_exits_0(tiny_bert_dir, data_root, tmp_path):
    """STS-B ignores the aggregation: simcse and {flow: aggregation wmean} are one record there, so one cell."""
    import json

    from embench.evaluation.results import Record, ResultStore
    from embench.grid.status import grid_status
    from embench.models.loader import load_model

    protocols = tmp_path / "p.yaml"
    protocols.write_text("- {name: simcse}\n- {name: flow, aggregation: wmean}\n")
    args = ["grid", "-m", str(tiny_bert_dir), "-t", "STSBenchmark", "-t", "STS12", "--protocols", str(protocols),
            "--results", str(tmp_path / "g"), "--data", str(data_root), "--cache-dir", str(tmp_path / "cache")]
    res = CliRunner().invoke(app, [*args, "--dry-run"])
    assert res.exit_code == 0 and "3 cells, 0 already done or running, 3 in 1 job(s)" in res.output, res.output
    (job,) = (tmp_path / "g" / ".grid" / "jobs").glob("*.json")
    cells = json.loads(job.read_text())["cells"]
    assert sorted(c["label"] for c in cells) == ["flow", "simcse", "simcse = flow"]
    desc = load_model(str(tiny_bert_dir)).describe()
    for c in cells:  # every cell stored: the grid is finished
        ResultStore(tmp_path / "g").save(Record(task=c["task"], display=c["task"], kind="sts", model=c["model"],
                                                main_score=0.5, scores={}, protocol=c["protocol"], encoder=desc, key=c["key"]))
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0 and "3 cells, 3 already done or running, 0 in 0 job(s)" in res.output, res.output
    assert "done: 3 running: 0 failed: 0 missing: 0 (of 3 cells)" in res.output
    cells, states = grid_status(tmp_path / "g")
    assert len(cells) == len(states) == 3
