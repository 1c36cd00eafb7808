"""Slurm job states where sacct cannot answer (no slurmdbd, or it is down): squeue says what is pending or running,
a job neither can tell is unknown and its cells are not submitted again, and nothing but the table reaches stdout;
seeds of a group held by a live job are not submitted twice. Fake ``sacct``/``squeue`` commands stand in for the
cluster (tests/test_slurm_grid.py asks a real one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from embench.core.errors import EmbenchError
from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.results import ResultStore
from embench.grid import slurm_jobs
from embench.grid.slurm_states import job_states, read_states
from embench.grid.state import Cell, GridState
from embench.grid.status import cell_states, status_frame, summary
from embench.train import seed_jobs
from embench.train.config import TrainConfig

SACCT_DOWN = "sacct: error: Problem talking to the database: Connection refused"


def _command(folder: Path, name: str, stdout: str = "", rc: int = 0, stderr: str = "") -> None:
    """A stand-in for a Slurm command: prints ``stdout``, ``stderr``, exits ``rc``, and notes its arguments."""
    folder.mkdir(exist_ok=True)
    script = folder / name
    script.write_text(f"#!/bin/sh\necho \"$@\" >> {folder / 'calls'}\nprintf '%s' '{stdout}'\n"
                      f"printf '%s' '{stderr}' >&2\nexit {rc}\n")
    script.chmod(0o755)


@pytest.fixture()
def slurm_bin(tmp_path, monkeypatch) -> Path:
    """A folder of fake Slurm commands, alone on PATH."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))
    return folder


def test_jobs_sacct_cannot_say_are_read_from_squeue(slurm_bin):
    _command(slurm_bin, "sacct", rc=1, stderr=SACCT_DOWN)
    _command(slurm_bin, "squeue", "7_0|RUNNING\n7_1|PENDING\n")
    # 8 is no longer queued: it ended, how only sacct could say
    assert job_states(["7_0", "7_1", "8"]) == {"7_0": "RUNNING", "7_1": "PENDING", "8": "ENDED"}
    calls = (slurm_bin / "calls").read_text().splitlines()
    assert len(calls) == 2 and calls[0].endswith("-j 7,8") and calls[1].endswith("--jobs 7,8")  # one call each


def test_sacct_answers_first_and_a_pending_arrays_range_gives_each_task(slurm_bin):
    _command(slurm_bin, "sacct", "7_0|CANCELLED by 0\n7_0.batch|CANCELLED\n7_[1-2,4%1]|PENDING\n")
    _command(slurm_bin, "squeue", "9|RUNNING\n")  # asked only of 9, which sacct has not recorded yet
    assert job_states(["7_0", "7_1", "7_2", "7_4", "9"]) == {
        "7_0": "CANCELLED", "7_1": "PENDING", "7_2": "PENDING", "7_4": "PENDING", "9": "RUNNING"}
    assert (slurm_bin / "calls").read_text().splitlines()[1].endswith("--jobs 9")


@pytest.mark.parametrize("lines", [
    ["9_[0-1%1]|CANCELLED by 0", "9_0|COMPLETED"],
    ["9_0|COMPLETED", "9_[0-1%1]|CANCELLED by 0"],
])
def test_a_task_on_a_line_of_its_own_is_not_overwritten_by_its_arrays_range(slurm_bin, lines):
    """A cancelled array's remainder is one range line, whose range sacct (Slurm 22.05) may write over tasks that
    ran and have lines of their own: the task that ran to the end read CANCELLED, its cells as cut short."""
    _command(slurm_bin, "sacct", "\n".join(lines) + "\n9_0.batch|COMPLETED\n")
    assert read_states("\n".join(lines)) == {"9_0": "COMPLETED", "9_1": "CANCELLED"}
    assert job_states(["9_0", "9_1"]) == {"9_0": "COMPLETED", "9_1": "CANCELLED"}


@pytest.mark.parametrize("squeue", [
    {"rc": 1, "stderr": "squeue: fatal: Could not establish a configuration source"},  # SLURM_CONF unset
    None,  # no squeue on this machine
])
def test_a_job_neither_sacct_nor_squeue_can_tell_is_unknown(slurm_bin, squeue):
    _command(slurm_bin, "sacct", rc=1, stderr=SACCT_DOWN)
    if squeue is not None:
        _command(slurm_bin, "squeue", **squeue)
    assert job_states(["7_0", "7_1"]) == {"7_0": "UNKNOWN", "7_1": "UNKNOWN"}


def test_squeue_knowing_none_of_the_jobs_is_an_answer(slurm_bin):
    _command(slurm_bin, "sacct", rc=1, stderr=SACCT_DOWN)
    _command(slurm_bin, "squeue", rc=1, stderr="slurm_load_jobs error: Invalid job id specified")
    assert job_states(["7_0"]) == {"7_0": "ENDED"}


def _held(results: Path, job: str, cells: list[Cell]) -> None:
    slurm_jobs.submitted_dir(results).mkdir(parents=True, exist_ok=True)
    (slurm_jobs.submitted_dir(results) / f"g{job}.json").write_text(json.dumps(
        {"slurm_job": job, "cells": [c.id for c in cells], "folder": str(results), "time": 1.0}))


def test_cells_of_a_job_of_unknown_state_are_unknown_not_missing(tmp_path, monkeypatch):
    """Neither "missing" nor "failed", which a re-run submits again while the job may still run them (a requeued
    job its failed ones); a live marker still says running; every such cell names its job."""
    proto = EvalProtocol().to_dict()
    cells = [Cell("m", t, proto, f"k{i}") for i, t in enumerate(("STS12", "STS13", "STS14", "STS15"))]
    state = GridState(tmp_path)
    state.init()
    state.mark(cells[1], "failed", job="j", error="stopped by SIGTERM")
    state.mark(cells[2], "running", job="j")
    marker = json.loads(state.marker_path(cells[2]).read_text())
    state.marker_path(cells[2]).write_text(json.dumps({**marker, "host": "node-7"}))
    _held(tmp_path, "12_1", cells[:3])
    _held(tmp_path, "13", cells[3:])
    monkeypatch.setattr(slurm_jobs, "job_states", lambda ids: {"12_1": "UNKNOWN", "13": "ENDED"})
    states = cell_states(cells, ResultStore(tmp_path), state)
    assert [states[c.id]["state"] for c in cells] == ["unknown", "unknown", "running", "missing"]
    why = list(status_frame(cells, states)["why"])
    assert why[0] == "Slurm job 12_1: state unknown (neither sacct nor squeue answered)"
    assert why[1] == "stopped by SIGTERM; Slurm job 12_1: state unknown (neither sacct nor squeue answered)"
    assert why[3] == "Slurm job 13 ended (squeue no longer lists it; sacct cannot say how)"
    assert summary(states) == {"done": 0, "running": 1, "failed": 0, "missing": 1, "unknown": 2}


@pytest.mark.slow  # a subprocess
def test_grid_status_as_csv_puts_only_the_csv_on_stdout_when_sacct_fails(tmp_path):
    """submitit's "Bypassing sacct error" warning went to stdout, ahead of the CSV."""
    proto = EvalProtocol().to_dict()
    cell = Cell("m", "STS12", proto, "k")
    state = GridState(tmp_path / "r")
    state.init()
    state.save_plan("p", {"spec": {}, "cells": [cell.to_dict()]})
    _held(tmp_path / "r", "7_1", [cell])
    _command(tmp_path / "bin", "sacct", rc=1, stderr=SACCT_DOWN)
    _command(tmp_path / "bin", "squeue", "7_0|RUNNING\n7_1|PENDING\n")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, "-m", "embench.cli", "grid", "status", str(tmp_path / "r"), "-f", "csv"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == ["model,task,protocol,state,log,why", "m,STS12,default,running,,Slurm job 7_1 PENDING"]
    assert "done: 0 running: 1 failed: 0 missing: 0 (of 1 cells)" in done.stderr


# -- seeds of a group -------------------------------------------------------------------------------------------
class _Job:
    def __init__(self, job_id: str):
        self.job_id = job_id


@pytest.fixture()
def fake_submission(monkeypatch):
    """submitit's array submission replaced: the seeds each call submits, as the tasks of arrays 20, 21, ..."""
    from embench.grid import slurm

    submitted: list[list[int]] = []

    def map_array(executor, fn, cfgs, seeds, options=""):
        submitted.append(list(seeds))
        return [_Job(f"{19 + len(submitted)}_{i}") for i in range(len(seeds))]

    monkeypatch.setattr(slurm, "make_executor", lambda *a, **k: None)
    monkeypatch.setattr(slurm, "map_array", map_array)
    return submitted


def test_a_seed_whose_job_is_pending_or_running_is_not_submitted_again(tmp_path, monkeypatch, fake_submission):
    from embench.train.seeds import submit_seeds

    cfg = TrainConfig(out=str(tmp_path / "grp"))
    assert submit_seeds(cfg, [1, 2, 3])[0] == [1, 2, 3]
    assert json.loads(seed_jobs.record_path(cfg.out, 2).read_text())["slurm_job"] == "20_1"
    # submitted again while seed 1 runs, seed 2's task failed and seed 3's job cannot be told
    now = {"20_0": "RUNNING", "20_1": "FAILED", "20_2": "UNKNOWN"}
    monkeypatch.setattr(seed_jobs, "job_states", lambda ids: {i: now.get(i, "PENDING") for i in ids})
    todo, jobs, held = submit_seeds(cfg, [1, 2, 3])
    assert todo == [2] and fake_submission == [[1, 2, 3], [2]]
    assert held == {1: ("20_0", "RUNNING"), 3: ("20_2", "UNKNOWN")}
    assert seed_jobs.describe(1, "20_0", "RUNNING", cfg.out) == "seed 1: not submitted again: its Slurm job 20_0 is RUNNING"
    assert "neither sacct nor squeue can tell the state of its Slurm job 20_2" in seed_jobs.describe(3, "20_2", "UNKNOWN", cfg.out)
    assert json.loads(seed_jobs.record_path(cfg.out, 2).read_text())["slurm_job"] == "21_0"
    with pytest.raises(EmbenchError, match=r"--overwrite would clear .* \(seed 1: Slurm job 20_0 RUNNING, seed 2: "
                                           r"Slurm job 21_0 PENDING, seed 3: Slurm job 20_2 UNKNOWN\)"):
        submit_seeds(TrainConfig(out=cfg.out, overwrite=True), [1, 2, 3])


def test_a_seed_task_failing_on_an_embench_error_says_it_in_one_line(tmp_path, monkeypatch, capsys):
    from embench.grid import slurm
    from embench.train import seeds

    def in_use(cfg, seed):
        raise EmbenchError(f"--out {cfg.out}/seed-{seed} is in use by another training run")

    monkeypatch.setattr(seeds, "train_seed", in_use)
    monkeypatch.setattr(slurm, "job_environment", lambda: None)
    with pytest.raises(SystemExit) as ended:
        seeds.SeedJob()(TrainConfig(out=str(tmp_path)), 1)
    assert ended.value.code == 1  # the array task still ends FAILED
    assert capsys.readouterr().err == f"seed 1: --out {tmp_path}/seed-1 is in use by another training run\n"
