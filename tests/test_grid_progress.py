"""Issue 36, item 10: a grid says what it does while it runs, through a pipe too (each worker's lines reach
``embench grid``'s stderr as they are written), and it reuses what ``embench run`` cached: one set of weights,
one cache key, whatever the command."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from embench.cli.app import app
from embench.grid import GridSpec, run_grid
from embench.grid.plan import PINNED
from embench.models.loader import load_model


def test_the_last_layer_asked_for_by_number_has_the_default_s_cache_key(tiny_bert_dir):
    """A grid job pins the settings the plan saw (the layer as a number): the same vectors as `embench run`'s."""
    default = load_model(tiny_bert_dir, device="cpu")
    pinned = load_model(tiny_bert_dir, device="cpu", **{k: default.describe()[k] for k in PINNED})
    assert pinned.settings.layer == default.num_layers and default.settings.layer is None
    assert pinned.cache_key() == default.cache_key()
    assert load_model(tiny_bert_dir, device="cpu", layer=-1).cache_key() == default.cache_key()
    assert default.view(default.num_layers).cache_key() == default.cache_key()
    assert load_model(tiny_bert_dir, device="cpu", layer=1).cache_key() != default.cache_key()  # other vectors


@pytest.mark.slow
def test_a_grid_after_run_encodes_nothing(tiny_bert_dir, data_root, tmp_path):
    cache = tmp_path / "cache"
    run = CliRunner().invoke(app, ["run", "-m", str(tiny_bert_dir), "-t", "STS16", "--results-dir", str(tmp_path / "run"),
                                   "--cache-dir", str(cache), "--data", str(data_root), "-q", "--device", "cpu"])
    assert run.exit_code == 0, run.output
    spec = GridSpec(models=[str(tiny_bert_dir)], tasks=["STS16"], protocols=[{}], data=str(data_root), cache_dir=str(cache),
                    model_options={"device": "cpu"})
    p = run_grid(spec, tmp_path / "grid")
    assert p.count("done") == 1
    record = json.loads(next((tmp_path / "grid").glob("*/*.json")).read_text())
    assert record["provenance"]["texts_encoded"] == 0  # every vector from run's cache


@pytest.mark.slow
def test_a_piped_grid_relays_its_workers_lines_while_they_run(tiny_bert_dir, data_root, tmp_path):
    cmd = [sys.executable, "-m", "embench.cli", "grid", "-m", str(tiny_bert_dir), "-t", "STS16", "-t", "STS13",
           "--results", str(tmp_path / "grid"), "--data", str(data_root), "--cache-dir", str(tmp_path / "cache"),
           "--device", "cpu"]
    grid = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines, running_at_first_worker_line = [], None
    deadline = time.time() + 300
    for line in grid.stdout:
        lines.append(line.rstrip("\n"))
        if running_at_first_worker_line is None and line.startswith("[") and "job " in line:
            running_at_first_worker_line = grid.poll() is None
        assert time.time() < deadline, "\n".join(lines)
    assert grid.wait() == 0, "\n".join(lines)
    out = "\n".join(lines)
    job = next(Path(tmp_path / "grid" / ".grid" / "jobs").glob("*.json")).stem
    assert running_at_first_worker_line, out  # the worker's first line came while the grid still ran
    assert f"[{job}] job {job}:" in out  # the worker's own lines, behind its job id
    assert any(x.startswith(f"[{job}] ") and "STS16" in x for x in lines), out  # each cell as it is scored
    assert f"[{job}] done: 1 of 1 job(s) finished" in out
    assert "planning the grid: 1/1 models" in out
