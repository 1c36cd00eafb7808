"""A grid's cells are found from any folder: the model's record folder and the results folder are fixed when the
grid is planned, not read against the cwd of each later `grid status` (or after the model's folder moved)."""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner

from embench.cli.app import app


@pytest.mark.slow
def test_grid_status_finds_finished_cells_from_another_cwd_and_after_the_model_moved(tiny_bert_dir, data_root, tmp_path,
                                                                                      monkeypatch):
    shutil.copytree(tiny_bert_dir, tmp_path / "models" / "bert-b")
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["grid", "-m", "models/bert-b", "-t", "STS16", "--results", "g5", "--data",
                                   str(data_root), "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 0, res.output
    assert f"log {tmp_path / 'g5'}" in res.output  # the job's log named whole: a marker's log is found from anywhere
    monkeypatch.chdir("/")
    res = CliRunner().invoke(app, ["grid", "status", str(tmp_path / "g5")])
    assert res.exit_code == 0 and "done: 1 running: 0 failed: 0 missing: 0 (of 1 cells)" in res.output, res.output
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models" / "bert-b").rename(tmp_path / "models" / "bert-moved")
    res = CliRunner().invoke(app, ["grid", "status", "g5"])
    assert res.exit_code == 0 and "done: 1 running: 0 failed: 0 missing: 0 (of 1 cells)" in res.output, res.output

