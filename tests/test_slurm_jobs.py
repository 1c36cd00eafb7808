"""The pieces of the Slurm executor that need no cluster: SIGTERM beside submitit's requeue signal, the
``--slurm-option`` settings, cells read against their jobs' Slurm states, and seeds finishing at once.
(tests/test_slurm_grid.py and tests/test_slurm_train.py run them on a real Slurm cluster.)"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
from pathlib import Path

import pytest

from embench.core.errors import EmbenchError
from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.results import ResultStore
from embench.evaluation.seed_groups import read_seed_group
from embench.grid import slurm_jobs
from embench.grid.job_signals import stop_on_sigterm
from embench.grid.slurm import SlurmSettings
from embench.grid.state import Cell, GridState
from embench.grid.status import cell_states, status_frame
from embench.train.seeds import add_to_group  # imported here: the forked processes below inherit it


# -- SIGTERM in a submitit job -----------------------------------------------------------------------------------
@pytest.fixture()
def requeue_handler():
    """A stand-in for submitit's USR2 handler (it checkpoints, runs `scontrol requeue`, then sys.exit)."""
    calls = []

    def handler(signum, frame):
        calls.append(signum)
        raise SystemExit(-1)

    before = signal.signal(signal.SIGUSR2, handler)
    yield calls
    signal.signal(signal.SIGUSR2, before)


def test_sigterm_in_a_job_stops_it_as_ctrl_c_and_the_handlers_are_put_back(requeue_handler):
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), stop_on_sigterm("USR2") as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        signal.pause()  # never reached: the handler raises in this frame
    assert stop.terminated
    assert signal.getsignal(signal.SIGTERM) is before and requeue_handler == []


def test_submitits_requeue_signal_still_reaches_submitit_and_the_sigterm_of_the_requeue_is_ignored(requeue_handler):
    with pytest.raises(SystemExit), stop_on_sigterm("USR2") as stop:
        try:
            os.kill(os.getpid(), signal.SIGUSR2)
            signal.pause()
        finally:  # the requeue's exit is on its way: the SIGTERM `scontrol requeue` sends must not cut it short
            os.kill(os.getpid(), signal.SIGTERM)
    assert requeue_handler == [signal.SIGUSR2] and not stop.terminated


def test_submitits_not_requeued_error_ends_the_job_past_a_tasks_except_exception():
    class UncompletedJobError(RuntimeError):
        """What submitit raises when a job timed out too often to requeue."""

    def handler(signum, frame):
        raise UncompletedJobError("Job not requeued because: timed-out too many times.")

    before = signal.signal(signal.SIGUSR2, handler)
    try:
        with pytest.raises(UncompletedJobError, match="too many times"), stop_on_sigterm("USR2"):
            try:  # a grid job's per-task guard: one task's failure must not stop the others
                os.kill(os.getpid(), signal.SIGUSR2)
                signal.pause()
            except Exception:
                pytest.fail("submitit's error was taken for a task's failure")
    finally:
        signal.signal(signal.SIGUSR2, before)


# -- settings ----------------------------------------------------------------------------------------------------
def test_slurm_options_set_the_named_settings_and_pass_any_other_to_sbatch():
    s = SlurmSettings.from_options(["timeout-min=30", "partition=gpu", "gpus_per_job=2", "account=nlp", "qos=high"])
    assert (s.timeout_min, s.partition, s.gpus_per_job) == (30, "gpu", 2)
    assert s.extra == {"account": "nlp", "qos": "high"}
    params = s.parameters()
    assert params["timeout_min"] == 30 and params["slurm_partition"] == "gpu" and params["gpus_per_node"] == 2
    assert params["slurm_additional_parameters"] == {"account": "nlp", "qos": "high"}
    with pytest.raises(EmbenchError, match="--slurm-option timeout_min=soon: timeout_min takes a whole number"):
        SlurmSettings.from_options(["timeout_min=soon"])
    with pytest.raises(EmbenchError, match="expected key=value"):
        SlurmSettings.from_options(["partition"])


# -- cells against their jobs' states ----------------------------------------------------------------------------
def test_cells_read_their_slurm_jobs_states(tmp_path, monkeypatch):
    """A pending or running job holds its cells (a re-run does not submit them twice); a job that ended leaves its
    cells failed or missing, each naming the job and how it ended; cells done are done whatever their job did."""
    proto = EvalProtocol().to_dict()
    cells = [Cell("m", t, proto, f"k{i}") for i, t in enumerate(("STS12", "STS13", "STS14", "STS15", "STS16"))]
    state = GridState(tmp_path)
    state.init()
    state.mark(cells[1], "failed", job="j", error="stopped by SIGTERM")
    state.mark(cells[2], "running", job="j", slurm_job="12_1")
    marker = json.loads(state.marker_path(cells[2]).read_text())  # left by a node's process this machine cannot see
    state.marker_path(cells[2]).write_text(json.dumps({**marker, "host": "node-7"}))
    jobs = {"12_0": [cells[0]], "12_1": [cells[1], cells[2]], "13": [cells[3], cells[4]]}
    for job, held in jobs.items():
        (slurm_jobs.submitted_dir(tmp_path)).mkdir(parents=True, exist_ok=True)
        (slurm_jobs.submitted_dir(tmp_path) / f"g{job}.json").write_text(json.dumps(
            {"slurm_job": job, "cells": [c.id for c in held], "folder": str(tmp_path), "time": 1.0}))
    asked = []

    def sacct(ids):
        asked.append(sorted(ids))
        return {"12_0": "PENDING", "12_1": "CANCELLED", "13": "RUNNING"}

    monkeypatch.setattr(slurm_jobs, "job_states", sacct)
    states = cell_states(cells, ResultStore(tmp_path), state)
    assert [states[c.id]["state"] for c in cells] == ["running", "failed", "missing", "running", "running"]
    assert states[cells[0].id]["note"] == "Slurm job 12_0 PENDING"
    assert states[cells[2].id]["note"] == "Slurm job 12_1 ended CANCELLED"
    assert list(status_frame(cells, states)["why"])[1] == "stopped by SIGTERM; Slurm job 12_1 ended CANCELLED"
    assert len(asked) == 1 and set(asked[0]) == {"12_0", "12_1", "13"}  # one sacct call for every job


def _submitted(results: Path, slurm_job: str, cells: list[Cell], job: str = "m-1") -> None:
    slurm_jobs.submitted_dir(results).mkdir(parents=True, exist_ok=True)
    (slurm_jobs.submitted_dir(results) / f"{job}.json").write_text(json.dumps(
        {"slurm_job": slurm_job, "cells": [c.id for c in cells], "folder": str(results / ".grid/slurm/%j"),
         "time": 1.0}))


def _running_on_a_node(results: Path, marker: dict) -> Cell:
    """A cell of Slurm job 12_0 whose running marker (with ``marker``'s fields) a process on node-7 wrote."""
    cell = Cell("m", "STS12", EvalProtocol().to_dict(), "k")
    _submitted(results, "12_0", [cell])
    grid = GridState(results)
    grid.init()
    grid.mark(cell, "running", job="m-1", **marker)
    raw = json.loads(grid.marker_path(cell).read_text())
    grid.marker_path(cell).write_text(json.dumps({**raw, "host": "node-7"}))
    return cell


@pytest.mark.parametrize(("marker", "state"), [
    ({}, "running"),  # a local job running the cell since, under the same grid job name
    ({"slurm_job": "14_0"}, "running"),  # a later Slurm job's, still running
    ({"slurm_job": "12_0"}, "missing"),  # the ended job's own
    ({"log": ".grid/slurm/12_0/12_0_0_log.err"}, "missing"),  # the ended job's, from an embench that wrote no id
    ({"log": ".grid/logs/m-1.log"}, "running"),  # a local job's
])
def test_a_slurm_job_that_ended_makes_missing_only_the_running_markers_it_wrote(tmp_path, monkeypatch, marker, state):
    """A cell whose Slurm job FAILED, run again by a local job, read "missing" while that job ran it: a second
    re-run (or a dry run) would have planned it again. The markers of a process Slurm did not run are its own."""
    cell = Cell("m", "STS12", EvalProtocol().to_dict(), "k")
    _submitted(tmp_path, "12_0", [cell])
    grid = GridState(tmp_path)
    grid.init()
    grid.mark(cell, "running", job="m-1", **marker)  # this process: alive, on this host
    if "slurm_job" in marker or "log" in marker:  # a node's process, which this machine cannot see
        raw = json.loads(grid.marker_path(cell).read_text())
        grid.marker_path(cell).write_text(json.dumps({**raw, "host": "node-7"}))
    monkeypatch.setattr(slurm_jobs, "job_states", lambda ids: {i: "RUNNING" if i == "14_0" else "FAILED" for i in ids})
    st = cell_states([cell], ResultStore(tmp_path), grid)[cell.id]
    assert (st["state"], st["note"]) == (state, "Slurm job 12_0 ended FAILED")


@pytest.mark.parametrize(("marker", "earlier", "state"), [
    ({"slurm_job": "11_0"}, "FAILED", "missing"),
    ({"log": ".grid/slurm/11_0/11_0_0_log.err"}, "NODE_FAIL", "missing"),  # from an embench that wrote no id
    ({"slurm_job": "11_0"}, "RUNNING", "running"),  # (requeued) it may still run the cell
    ({"slurm_job": "11_0"}, "UNKNOWN", "running"),  # cannot be ruled out
])
def test_a_marker_an_earlier_slurm_job_left_is_missing_once_that_job_has_ended_too(tmp_path, monkeypatch, marker,
                                                                                     earlier, state):
    """Job 11_0 died on its node leaving its running marker; the re-run's 12_0 was cancelled while pending, so it
    never marked the cell: the cell read ``running`` for ever and no re-run submitted it again. The marker's own job
    is asked about in the same sacct call."""
    cell = _running_on_a_node(tmp_path, marker)
    asked = []

    def sacct(ids):
        asked.append(sorted(ids))
        return {"12_0": "CANCELLED", "11_0": earlier}

    monkeypatch.setattr(slurm_jobs, "job_states", sacct)
    st = cell_states([cell], ResultStore(tmp_path), GridState(tmp_path))[cell.id]
    assert st["state"] == state and asked == [["11_0", "12_0"]]
    assert st["note"] == ("Slurm job 12_0 ended CANCELLED" + (
        f"; its running marker is Slurm job 11_0's, which ended {earlier}" if state == "missing" else ""))


@pytest.mark.slow  # imports the worker (and through it torch)
def test_a_slurm_array_task_names_itself_in_its_cells_markers(tmp_path, monkeypatch):
    """What lets a Slurm job that ended tell its own markers from another job's: submitit's id of the array task
    (``12_0``, as ``record`` notes it) reaches the job, which writes it in each marker."""
    from embench.grid import slurm, worker

    class Env:
        cluster, job_id = "slurm", "12_0"
        paths = type("Paths", (), {"stderr": tmp_path / "12_0_0_log.err"})

    given = []
    monkeypatch.setattr(slurm, "job_environment", Env)
    monkeypatch.setattr(worker, "run_job", lambda *a: given.append(a) or [])
    slurm.GridJob()("m-1.json")
    assert given == [("m-1.json", str(tmp_path / "12_0_0_log.err"), "12_0")]
    monkeypatch.undo()

    cell = Cell("m", "STS12", EvalProtocol().to_dict(), "k")
    job = tmp_path / "m-1.json"
    job.write_text(json.dumps({"id": "m-1", "model": str(tmp_path / "no-such-model"), "model_options": {},
                               "cells": [cell.to_dict()], "results": str(tmp_path), "data": str(tmp_path),
                               "cache_dir": str(tmp_path), "batch_size": 2, "devices": []}))
    seen = []
    mark = GridState.mark
    monkeypatch.setattr(GridState, "mark", lambda self, c, s, **info: (seen.append((s, info)), mark(self, c, s, **info)))
    worker.run_job(job, None, "12_0")  # the model does not load: the cell fails, after its running marker
    assert seen[0] == ("running", {"job": "m-1", "log": None, "slurm_job": "12_0"})


def test_without_sacct_and_squeue_a_held_cell_is_unknown_naming_its_job(tmp_path, monkeypatch):
    """A laptop looking at a cluster's results folder cannot rule the job out: not "missing" (a re-run would submit
    its cells a second time), but unknown, naming the job."""
    proto = EvalProtocol().to_dict()
    cell = Cell("m", "STS12", proto, "k")
    (slurm_jobs.submitted_dir(tmp_path)).mkdir(parents=True)
    (slurm_jobs.submitted_dir(tmp_path) / "g.json").write_text(json.dumps(
        {"slurm_job": "5", "cells": [cell.id], "folder": str(tmp_path), "time": 1.0}))
    monkeypatch.setenv("PATH", str(tmp_path))  # no sacct, no squeue here
    st = cell_states([cell], ResultStore(tmp_path), GridState(tmp_path))[cell.id]
    assert st["state"] == "unknown" and st["note"] == "Slurm job 5: state unknown (neither sacct nor squeue answered)"


# -- seeds finishing at once -------------------------------------------------------------------------------------
def _add_seed(out: str, seed: int, start) -> None:
    (Path(out) / f"seed-{seed}" / "best").mkdir(parents=True)
    start.wait()  # every process reads the group at the same moment, as array tasks finishing together would
    add_to_group(Path(out), seed, Path(out) / f"seed-{seed}" / "best", {"method": "crop"})


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_seeds_that_finish_at_once_all_land_in_the_group(tmp_path):
    """Array tasks of one seed group finish together: each adds its seed to what the others wrote (without the
    lock, 16 processes released at once keep 4 to 11 of their 16 seeds here)."""
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(16)
    procs = [ctx.Process(target=_add_seed, args=(str(tmp_path), s, start)) for s in range(1, 17)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert [p.exitcode for p in procs] == [0] * 16
    assert read_seed_group(tmp_path).seeds == list(range(1, 17))


# -- the train command's executor ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("extra", "message"), [
    (["--executor", "slurm"], "--executor slurm submits one array task per seed: give --seeds"),
    (["--seeds", "1-2", "--executor", "lsf"], "--executor 'lsf': choose local or slurm"),
])
def test_train_on_slurm_is_one_array_task_per_seed_and_says_so(extra, message, tmp_path):
    from typer.testing import CliRunner

    from embench.cli.app import app

    res = CliRunner().invoke(app, ["train", "--method", "crop", "-m", "m", "--out", str(tmp_path / "o"), *extra])
    assert isinstance(res.exception, EmbenchError) and message in str(res.exception), res.output
    assert not (tmp_path / "o").exists()  # refused before anything is written or submitted


@pytest.mark.slow  # a subprocess
def test_sbatch_refusing_the_array_is_one_error_quoting_it(tmp_path, monkeypatch):
    """A cluster that cannot be reached, or an unknown partition or account: sbatch's words in one error, where
    submitit's FailedJobError traceback was printed (grid --executor slurm and train --executor slurm alike)."""
    from embench.grid.slurm import submit

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text("#!/bin/sh\necho 'sbatch: error: invalid partition specified: nosuch' >&2\n"
                                    "echo 'sbatch: error: Batch job submission failed: Invalid partition name specified' >&2\nexit 1\n")
    (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    job = tmp_path / "job-0.json"
    job.write_text("{}")
    with pytest.raises(EmbenchError, match=r"sbatch refused the job array: sbatch: error: invalid partition specified: "
                                           r"nosuch; sbatch: error: Batch job submission failed.*nothing was submitted"):
        submit([job], tmp_path / "results", SlurmSettings(partition="nosuch"))


@pytest.mark.parametrize("marker", [{"log": ".grid/slurm/my-run/worker.err"}, {"slurm_job": "12_0; rm"}])
def test_a_marker_names_a_slurm_job_only_by_a_slurm_id(tmp_path, monkeypatch, marker):
    """Any folder name under a ``slurm`` folder was taken for the Slurm job of a running marker and sent to sacct with
    every other id: ``sacct -j my-run,12_0`` fails, so every job read ENDED and running cells read missing."""
    cell = _running_on_a_node(tmp_path, marker)
    asked = []

    def sacct(ids):  # as job_states answers when one id makes sacct fail and squeue lists none of them
        asked.extend(ids)
        bad = any(not i.replace("_", "").isdigit() for i in ids)
        return {i: "ENDED" if bad else "RUNNING" for i in ids}

    monkeypatch.setattr(slurm_jobs, "job_states", sacct)
    st = cell_states([cell], ResultStore(tmp_path), GridState(tmp_path))[cell.id]
    assert asked == ["12_0"] and st["state"] == "running"
