"""`embench grid --executor slurm` on a real Slurm cluster started on this machine (tests/slurm_cluster.py): two
tiny random BERTs x two STS tasks x two protocols, one array task per model through submitit, against a serial
``embench run`` of the same cells; a cancelled array task, a re-run of what it left, and a job requeued at its
time limit."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from embench.cli.app import app
from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.results import slug
from embench.grid import GridSpec, grid_status, run_grid
from embench.grid.slurm import SlurmSettings
from embench.grid.slurm_jobs import submitted_dir
from embench.grid.state import Cell, GridState

TASKS = ["STSBenchmark", "STS16"]
# the second protocol reads the original texts, so its cells encode again: a job is still busy after its first records
PROTOCOLS = [{}, {"name": "raw", "text": "raw"}]
PROTOCOLS_YAML = "- {}\n- {name: raw, text: raw}\n"
BATCH = 4  # small batches: the encoding that a cancel or a time limit interrupts lasts a few seconds


@pytest.fixture(scope="module")
def models(tiny_model) -> list[str]:
    """Two randomly initialised BERTs (hidden 32; 2 and 1 layers) with MiniLM's tokenizer."""
    from transformers import BertConfig, BertModel

    def bert(layers: int):
        return lambda vocab: BertModel(BertConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=layers,
                                                  num_attention_heads=2, intermediate_size=64, max_position_embeddings=512))

    return [str(tiny_model("slurm-bert-a", bert(2))), str(tiny_model("slurm-bert-b", bert(1)))]


@pytest.fixture(scope="module")
def serial(models, data_root, tmp_path_factory, one_thread) -> Path:
    """The same cells by ``embench run``, one model and protocol after another (one torch thread, as each Slurm task
    of one CPU gets)."""
    results, cache = tmp_path_factory.mktemp("slurm-serial"), tmp_path_factory.mktemp("slurm-serial-cache")
    for model in models:
        for proto in PROTOCOLS:
            flags = [x for k, v in proto.items() if k != "name" for x in (f"--{k}", v)]
            res = CliRunner().invoke(app, ["run", "-m", model, *(x for t in TASKS for x in ("-t", t)), *flags,
                                           "--results-dir", str(results), "--cache-dir", str(cache), "--data", str(data_root),
                                           "--batch-size", str(BATCH), "-q"])
            assert res.exit_code == 0, res.output
    return results


def _records(results: Path, models: list[str] | None = None) -> dict[str, dict]:
    wanted = {slug(m) for m in models} if models else None
    return {str(p.relative_to(results)): json.loads(p.read_text()) for p in sorted(results.glob("*/*.json"))
            if wanted is None or p.parent.name in wanted}


def _same_records(grid: Path, serial: Path, models: list[str] | None = None) -> None:
    got, want = _records(grid, models), _records(serial, models)
    assert sorted(got) == sorted(want) and len(want) == len(TASKS) * len(PROTOCOLS) * (len(models) if models else 2)
    for name, w in want.items():
        g = got[name]
        for f in ("task", "model", "key", "protocol", "encoder"):
            assert g[f] == w[f], (name, f)
        assert g["main_score"] == pytest.approx(w["main_score"], abs=1e-6), name


def _spec(models: list[str], data_root: Path, cache: Path) -> GridSpec:
    return GridSpec(models=list(models), tasks=TASKS, protocols=PROTOCOLS, data=str(data_root), cache_dir=str(cache),
                    batch_size=BATCH)


def _until(what: str, ok: Callable[[], bool], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what}")
        time.sleep(0.05)


@pytest.mark.slow
def test_a_grid_on_slurm_with_a_task_cancelled_mid_way_ends_with_the_records_of_serial_runs(
        slurm, models, serial, data_root, tmp_path, monkeypatch):
    """One array task per model; the second is cancelled (scancel) while it encodes its second protocol: the first
    task's records stay, the cancelled one stops as on Ctrl-C (cells marked, encoded texts cached), `grid status`
    says what Slurm says, and the same command again submits only the cells the cancel left."""
    monkeypatch.setenv("EMBENCH_PROGRESS_EVERY", "0")  # a progress line per batch in the jobs' logs
    protocols, results = tmp_path / "protocols.yaml", tmp_path / "grid"
    protocols.write_text(PROTOCOLS_YAML)
    args = ["grid", "--executor", "slurm", *(x for m in models for x in ("--models", m)), *(x for t in TASKS for x in ("-t", t)),
            "--protocols", str(protocols), "--results", str(results), "--cpus-per-job", "1", "--batch-size", str(BATCH),
            "--data", str(data_root), "--cache-dir", str(tmp_path / "cache")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0 and "8 cells, 0 already done or running, 8 in 2 job(s)" in res.output, res.output
    array = re.search(r"submitted Slurm array (\d+)", res.output).group(1)
    victim, log = f"{array}_1", results / ".grid" / "slurm" / f"{array}_1" / f"{array}_1_0_log.err"  # models[1]'s task
    # while the array runs, `grid status` reads each job's state from Slurm (sacct, through submitit)
    shown: list[str] = []
    _until("`embench grid status` to show a running Slurm job", lambda: shown.append(
        CliRunner().invoke(app, ["grid", "status", str(results)]).output) or f"Slurm job {victim} RUNNING" in shown[-1])
    assert re.search(r"running: [1-8] ", shown[-1]), shown[-1]

    def encoding_its_second_protocol() -> bool:  # its first protocol's records are stored, the second is being encoded
        text = log.read_text() if log.is_file() else ""
        tail = text[text.rfind("[default]:"):] if text.count("[default]:") == len(TASKS) else ""
        return any(0 < int(n) < int(m) for n, m in re.findall(r"encoding .*: (\d+)/(\d+) texts", tail))

    _until("the second array task to encode its second protocol", encoding_its_second_protocol)
    slurm.run("scancel", victim)
    assert slurm.wait(array) == {f"{array}_0": "COMPLETED", victim: "CANCELLED"}
    # SIGTERM stopped it as Ctrl-C would: its unfinished cells are marked, the texts it had encoded written to the cache
    assert "stopped by SIGTERM; 2 cell(s) left, marked" in log.read_text()
    cells, st = grid_status(results)
    left = {c.id for c in cells if st[c.id]["state"] != "done"}
    assert left == {c.id for c in cells if c.model == models[1] and c.label == "raw"}
    for cid in left:
        assert st[cid]["state"] == "failed" and "stopped by SIGTERM" in st[cid]["error"] and st[cid]["log"] == str(log)
        assert st[cid]["note"] == f"Slurm job {victim} ended CANCELLED"
    shown = CliRunner().invoke(app, ["grid", "status", str(results)])
    assert shown.exit_code == 1 and f"Slurm job {victim} ended CANCELLED" in shown.output
    kept = {f: f.stat().st_mtime_ns for f in results.glob("*/*.json")}
    assert len(kept) == 6
    # the same command again submits the two cells the cancel left, and nothing else
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and "8 cells, 6 already done or running, 2 in 1 job(s)" in again.output, again.output
    rerun = re.search(r"submitted Slurm array (\d+)", again.output).group(1)
    assert slurm.wait(rerun) == {rerun: "COMPLETED"}
    assert all(f.stat().st_mtime_ns == t for f, t in kept.items())
    _same_records(results, serial)
    redone = [r for r in _records(results, [models[1]]).values() if r["protocol"]["text"] == "raw"]
    assert sum(r["provenance"]["texts_from_cache"] for r in redone) > 0  # what the cancelled job had encoded
    done = CliRunner().invoke(app, ["grid", "status", str(results)])
    assert done.exit_code == 0 and "done: 8 running: 0 failed: 0 missing: 0" in done.output, done.output
    # and once more: every cell is stored, nothing goes to Slurm
    last = CliRunner().invoke(app, args)
    assert last.exit_code == 0 and "nothing submitted" in last.output and "submitted Slurm array" not in last.output


@pytest.mark.slow
def test_a_job_at_its_time_limit_is_requeued_by_submitit_and_skips_the_cells_it_stored(
        slurm, models, serial, data_root, tmp_path):
    """Slurm warns a job with USR2 90 s before its limit (submitit's ``--signal=USR2@90``); a limit of a few minutes
    is too short for submitit to call it anything but a timeout. The test sends that warning itself once the first
    records are stored (submitit's own ``_interrupt(timeout=True)``: ``scancel --signal USR2``, to the job's step
    as Slurm does) instead of waiting on slurmctld's 30-second timer; submitit requeues the job and the requeued
    run finds those cells stored."""
    results = tmp_path / "grid"
    p = run_grid(_spec(models[:1], data_root, tmp_path / "cache"), results, executor="slurm",
                 slurm=SlurmSettings(cpus_per_job=1, timeout_min=3))
    job = p.submitted[0]
    folder = results / slug(models[0])
    _until("the first protocol's records", lambda: len(list(folder.glob("*.json"))) == len(TASKS))
    first = {f: f.stat().st_mtime_ns for f in folder.glob("*.json")}
    job._interrupt(timeout=True)
    states = slurm.wait(job.job_id)
    assert states == {job.job_id: "COMPLETED"}
    runs = slurm.run("sacct", "-n", "-X", "-D", "-P", "-o", "State", "-j", job.job_id).split()
    assert runs == ["REQUEUED", "COMPLETED"]
    out, err = Path(job.paths.stdout).read_text(), Path(job.paths.stderr).read_text()
    assert "this job is timed-out" in err and f"Requeued job {job.job_id}" in out
    second_run = err.split(f"job {p.jobs[0].id}:")[-1]  # each run of the job starts with this line
    assert second_run.count("(stored)") == len(TASKS) and second_run.count("(computed)") == len(TASKS)
    assert all(f.stat().st_mtime_ns == t for f, t in first.items())
    _same_records(results, serial, models[:1])


@pytest.mark.slow
def test_with_sacct_failing_the_states_of_pending_and_running_jobs_come_from_squeue(slurm, tmp_path, monkeypatch):
    """No slurmdbd, or one that is down: sacct fails, and the controller still knows what is queued. A task running
    and one pending behind it hold their cells (a re-run leaves them); with no controller either, the cells are
    unknown, naming their jobs, not missing."""
    array = slurm.run("sbatch", "--parsable", "--array=0-1%1", "--cpus-per-task=1", f"--output={tmp_path}/%A_%a.out",
                      "--wrap", "sleep 120").strip().split(";")[0]
    try:
        cells = [Cell("m", t, EvalProtocol().to_dict(), "k") for t in ("STS12", "STS13")]
        state = GridState(tmp_path / "r")
        state.init()
        state.save_plan("p", {"spec": {}, "cells": [c.to_dict() for c in cells]})
        submitted_dir(state.results).mkdir(parents=True)
        for i, cell in enumerate(cells):
            (submitted_dir(state.results) / f"job-{i}.json").write_text(json.dumps(
                {"slurm_job": f"{array}_{i}", "cells": [cell.id], "folder": str(tmp_path), "time": 1.0}))
        sacct = tmp_path / "bin" / "sacct"  # as sacct fails with slurmdbd down
        sacct.parent.mkdir()
        sacct.write_text("#!/bin/sh\necho 'sacct: error: Problem talking to the database: Connection refused' >&2\nexit 1\n")
        sacct.chmod(0o755)
        monkeypatch.setenv("PATH", f"{sacct.parent}:{os.environ['PATH']}")
        _until("the array's first task to run", lambda: f"{array}_0 RUNNING" in slurm.run(
            "squeue", "-h", "-r", "-o", "%i %T", "-j", array))
        _, st = grid_status(state.results)
        assert [(st[c.id]["state"], st[c.id]["note"]) for c in cells] == [
            ("running", f"Slurm job {array}_0 RUNNING"), ("running", f"Slurm job {array}_1 PENDING")]
        (tmp_path / "empty.conf").touch()  # no controller answers either (a missing file, squeue retries for 60 s)
        monkeypatch.setenv("SLURM_CONF", str(tmp_path / "empty.conf"))
        _, st = grid_status(state.results)
        assert [(st[c.id]["state"], st[c.id]["slurm_job"]) for c in cells] == [("unknown", f"{array}_0"), ("unknown", f"{array}_1")]
    finally:
        monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
        slurm.run("scancel", array)
