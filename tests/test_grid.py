"""The grid's inputs, states and files, without running a model: globs, list files, the protocols file,
cell states from records and markers, an older grid folder, the Slurm dry run."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from embench.cli.app import app
from embench.core.errors import EmbenchError
from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.results import Record, ResultStore, record_key
from embench.grid.spec import expand_models, read_protocols
from embench.grid.state import GRID_FORMAT, Cell, GridState
from embench.grid.status import cell_states, grid_status, status_frame, summary


def test_a_model_glob_that_matches_nothing_is_an_error_before_any_job(tmp_path):
    with pytest.raises(EmbenchError, match="matches nothing; no job was submitted"):
        expand_models([str(tmp_path / "ckpt-*")])
    res = CliRunner().invoke(app, ["grid", "--models", str(tmp_path / "step-*"), "--results", str(tmp_path / "r")])
    assert res.exit_code != 0 and "matches nothing" in str(res.exception or res.output)
    assert not (tmp_path / "r").exists()  # nothing planned, nothing written


@pytest.mark.slow
def test_a_device_this_machine_lacks_is_an_error_before_any_job_of_a_local_grid(tmp_path, tiny_bert_dir):
    """Before, the job was made and its cell failed on the device; a Slurm grid's devices are its nodes', not checked here."""
    for option in (["--devices", "cuda:0,cuda:99"], ["--device", "cuda:99"]):  # no machine has a hundred GPUs
        res = CliRunner().invoke(app, ["grid", "--models", str(tiny_bert_dir), "-t", "STSBenchmark", *option, "--results", str(tmp_path / "r")])
        assert res.exit_code != 0 and "CUDA device(s)" in str(res.exception or res.output)
        assert not (tmp_path / "r").exists()


def test_models_come_from_names_globs_and_list_files_in_order_each_once(tmp_path):
    for name in ("step-2", "step-10", "other"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")
    (tmp_path / "models.txt").write_text("# the baselines\nall-MiniLM-L6-v2\nstep-10   # relative to the file\n\n")
    got = expand_models([str(tmp_path / "step-*"), str(tmp_path / "models.txt"), "all-MiniLM-L6-v2"])
    assert got == [str(tmp_path / "step-10"), str(tmp_path / "step-2"), "all-MiniLM-L6-v2"]
    (tmp_path / "empty.txt").write_text("# nothing\n")
    with pytest.raises(EmbenchError, match="names no model"):
        expand_models([str(tmp_path / "empty.txt")])
    (tmp_path / "globs.txt").write_text("all-MiniLM-L6-v2\nckpts/step-*\n")
    with pytest.raises(EmbenchError, match=r"globs.txt:2: the pattern 'ckpts/step-\*' matches nothing"):  # the list, its line
        expand_models([str(tmp_path / "globs.txt")])
    (tmp_path / "utf16.txt").write_bytes("all-MiniLM-L6-v2\n".encode("utf-16"))  # Notepad's "Unicode"
    with pytest.raises(EmbenchError, match=r"utf16.txt: the model list is not UTF-8 text \(byte 0\)"):
        expand_models([str(tmp_path / "utf16.txt")])
    (tmp_path / "typo.txt").write_text("all-MiniLM-L6-v2\n./step-3\norg/hub-model\n")  # a hub id is kept, not checked
    with pytest.raises(EmbenchError, match=r"typo.txt:2: the local folder '.*step-3' does not exist"):  # was: when planning
        expand_models([str(tmp_path / "typo.txt")])
    with pytest.raises(EmbenchError, match=r"--models '\./nope': the local folder 'nope' does not exist"):
        expand_models(["./nope"])
    # the rule compare and run read a model path by: a file or an empty folder is no model either (grid checked only
    # that it existed, and loading failed when planning reached it)
    (tmp_path / "hollow").mkdir()
    (tmp_path / "notes.md").write_text("x\n")
    with pytest.raises(EmbenchError, match=r"--models '.*notes.md': '.*notes.md' is a file, not a model folder"):
        expand_models([str(tmp_path / "notes.md")])
    with pytest.raises(EmbenchError, match=r"--models '.*hollow': the folder '.*hollow' is empty, not a model folder"):
        expand_models([str(tmp_path / "hollow")])
    # a list line naming a file or an empty folder beside the list is refused with the line, as --models refuses it
    (tmp_path / "beside.txt").write_text("step-2\nnotes.md\n")
    with pytest.raises(EmbenchError, match=r"beside.txt:2: '.*notes.md' is a file, not a model folder"):
        expand_models([str(tmp_path / "beside.txt")])
    (tmp_path / "beside.txt").write_text("step-2\n\nhollow  # the run's folder, not filled yet\n")
    with pytest.raises(EmbenchError, match=r"beside.txt:3: the folder '.*hollow' is empty, not a model folder"):
        expand_models([str(tmp_path / "beside.txt")])


@pytest.mark.slow  # plans the grid: imports torch to load the model
def test_a_list_files_model_that_fails_to_load_names_the_list_and_its_line(env, monkeypatch):
    """A line no folder answers, kept as a hub id (``models/bert-zz``), failed when planning loaded it with "could not
    load model 'models/bert-zz'" alone: which list, which line, was lost on the way (the CLI expands the list, then
    run_grid expands its names again)."""
    monkeypatch.chdir(env)
    (env / "specs").mkdir()
    (env / "specs" / "list.txt").write_text("# the ablation\n\nmodels/bert-zz\n")
    res = CliRunner().invoke(app, ["grid", "-m", "specs/list.txt", "-t", "STS13", "--results", "rs", "--dry-run"])
    assert res.exit_code != 0
    assert str(res.exception).startswith("specs/list.txt:3: could not load model 'models/bert-zz'")
    origins: dict[str, str] = {}
    assert expand_models(["specs/list.txt"], origins) == ["models/bert-zz"]
    assert origins == {"models/bert-zz": "specs/list.txt:3"}


def test_the_protocols_file_is_a_list_of_protocol_settings_checked_against_the_choices(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("- {}\n- {name: bert-flow, aggregation: wmean, sick-split: full}\n")
    assert read_protocols(f) == [{}, {"aggregation": "wmean", "sick_split": "full", "name": "bert-flow"}]
    assert read_protocols(None) == [{}]
    j = tmp_path / "p.json"
    j.write_text(json.dumps({"protocols": [{"correlation": "pearson"}]}))
    assert read_protocols(j) == [{"correlation": "pearson"}]
    f.write_text("- {aggregation: all}\n- {agregation: wmean}\n")
    with pytest.raises(EmbenchError, match=r"p.yaml: entry 2: unknown protocol option\(s\): agregation"):
        read_protocols(f)
    f.write_text("- {aggregation: median}\n")
    with pytest.raises(EmbenchError, match=r"entry 1: invalid value 'median' for option aggregation"):
        read_protocols(f)
    f.write_text("- {name: a}\n- {name: b, aggregation: all}\n")  # the default spelt out is the same protocol
    with pytest.raises(EmbenchError, match=r"p.yaml: entries 1 and 2 are the same protocol \(aggregation=all\)"):
        read_protocols(f)
    f.write_text("aggregation: all\n")
    with pytest.raises(EmbenchError, match="expected a non-empty list"):
        read_protocols(f)
    for seed in ("abc", -1, 2**32, "true"):  # a seed that is no whole number 0 .. 2**32-1 was stored as given
        f.write_text(f"- {{seed: 7}}\n- {{seed: {seed}}}\n")
        with pytest.raises(EmbenchError, match=r"entry 2: invalid value .* for option seed; give a whole number"):
            read_protocols(f)


def _record(cell: Cell, encoder: dict) -> Record:
    return Record(task=cell.task, display=cell.task, kind="sts", model=cell.model, main_score=0.5, scores={},
                  protocol=cell.protocol, encoder=encoder, key=cell.key)


def test_each_cell_is_done_running_failed_or_missing(tmp_path):
    """done: its record is stored; running: a live process holds it; failed: with its log; a dead
    process's cell (a killed worker) is missing."""
    encoder = {"fingerprint": "abc", "pooling": "mean"}
    proto = EvalProtocol().to_dict()
    cells = [Cell("m", t, proto, record_key(t, encoder, proto)) for t in ("STS12", "STS13", "STS14", "STS15", "STS16")]
    store, state = ResultStore(tmp_path), GridState(tmp_path)
    store.save(_record(cells[0], encoder))
    state.mark(cells[1], "running", job="j1", log="j1.log")  # this process: alive
    state.mark(cells[2], "failed", job="j1", log="j1.log", error="ValueError: bad")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    state.mark(cells[3], "running", job="j2", log="j2.log")
    marker = json.loads(state.marker_path(cells[3]).read_text())
    state.marker_path(cells[3]).write_text(json.dumps({**marker, "pid": int(dead.stdout)}))
    states = cell_states(cells, store, state)
    assert [states[c.id]["state"] for c in cells] == ["done", "running", "failed", "missing", "missing"]
    assert states[cells[2].id]["log"] == "j1.log" and "bad" in states[cells[2].id]["error"]
    assert summary(states) == {"done": 1, "running": 1, "failed": 1, "missing": 2, "unknown": 0}
    frame = status_frame(cells, states)
    assert list(frame["task"]) == ["STS13", "STS14", "STS15", "STS16"]  # done cells are only counted
    # a marker from another machine: its process cannot be seen from here, so it is trusted
    state.mark(cells[4], "running", job="j3")
    m = json.loads(state.marker_path(cells[4]).read_text())
    state.marker_path(cells[4]).write_text(json.dumps({**m, "host": socket.gethostname() + "-other", "pid": 1}))
    assert cell_states(cells, store, state)[cells[4].id]["state"] == "running"


def test_grid_files_are_never_read_as_records(tmp_path):
    state = GridState(tmp_path)
    state.init()
    state.save_plan("p", {"cells": []})
    state.mark(Cell("m", "STS12", {}, "k"), "failed")
    assert ResultStore(tmp_path).records() == []


def test_a_grid_folder_of_another_format_names_both_versions(tmp_path):
    (tmp_path / ".grid").mkdir()
    (tmp_path / ".grid" / "FORMAT").write_text("grid-format 0\nembench 0.0.9\n")
    with pytest.raises(EmbenchError, match=rf"embench 0.0.9 in grid format 0; this is embench .* \(grid format {GRID_FORMAT}\)"):
        grid_status(tmp_path)
    with pytest.raises(EmbenchError, match="no grid was run here"):
        grid_status(tmp_path / "..")


def test_records_of_an_older_embench_count_as_done(tmp_path):
    """A record's identity is its key; the embench version that wrote it is provenance, not identity."""
    encoder = {"fingerprint": "abc"}
    proto = EvalProtocol().to_dict()
    cell = Cell("m", "STS12", proto, record_key("STS12", encoder, proto))
    rec = _record(cell, encoder)
    rec.provenance = {"embench": "0.0.1"}
    ResultStore(tmp_path).save(rec)
    assert cell_states([cell], ResultStore(tmp_path), GridState(tmp_path))[cell.id]["state"] == "done"


def test_status_command_lists_the_cells_not_done_with_each_log(tmp_path):
    proto = EvalProtocol().to_dict()
    cells = [Cell("m", t, proto, f"k{i}", "default") for i, t in enumerate(("STS12", "STS13"))]
    state = GridState(tmp_path)
    state.init()
    state.save_plan("p", {"cells": [c.to_dict() for c in cells]})
    state.mark(cells[0], "failed", job="j", log=str(tmp_path / "j.log"), error="RuntimeError: boom")
    res = CliRunner().invoke(app, ["grid", "status", str(tmp_path)])
    assert res.exit_code == 1
    assert f"log {tmp_path / 'j.log'}" in res.output and "boom" in res.output
    assert "done: 0 running: 0 failed: 1 missing: 1 (of 2 cells)" in res.output
    assert os.path.isdir(tmp_path / ".grid" / "cells")
    rows = json.loads(CliRunner().invoke(app, ["grid", "status", str(tmp_path), "-f", "json"]).stdout)  # JSON alone
    assert rows[0]["log"] == str(tmp_path / "j.log") and rows[0]["state"] == "failed"  # each failure's log in its row
    # once every cell is stored, csv and json say so with an empty list (they printed nothing; a table shows the counts)
    done, encoder = tmp_path / "done", {"fingerprint": "abc"}
    cells = [Cell("m", t, proto, record_key(t, encoder, proto), "default") for t in ("STS12", "STS13")]
    GridState(done).init()
    GridState(done).save_plan("p", {"cells": [c.to_dict() for c in cells]})
    for c in cells:
        ResultStore(done).save(_record(c, encoder))
    res = CliRunner().invoke(app, ["grid", "status", str(done), "-f", "csv"])
    assert res.exit_code == 0 and res.stdout.splitlines()[0] == "model,task,protocol,state,log,why", res.stdout
    res = CliRunner().invoke(app, ["grid", "status", str(done), "-f", "json"])
    assert res.exit_code == 0 and json.loads(res.stdout) == [], res.stdout


@pytest.mark.slow
def test_slurm_dry_run_writes_the_sbatch_file_of_one_array_and_submits_nothing(tiny_bert_dir, data_root, tmp_path):
    import shutil

    protocols = tmp_path / "p.yaml"
    protocols.write_text("- {}\n- {correlation: pearson}\n")
    other = tmp_path / "tiny-copy"  # a second checkpoint
    shutil.copytree(tiny_bert_dir, other)
    (other / "config.json").write_text((other / "config.json").read_text().replace('"hidden_dropout_prob": 0.1', '"hidden_dropout_prob": 0.2'))
    res = CliRunner().invoke(app, [
        "grid", "--models", str(tiny_bert_dir), "--models", str(other), "-t", "STSBenchmark", "-t", "STS16",
        "--protocols", str(protocols), "--results", str(tmp_path / "r"), "--executor", "slurm", "--dry-run",
        "--slurm-partition", "gpu-short", "--gpus-per-job", "1", "--array-parallelism", "1",
        "--slurm-option", "account=nlp", "--data", str(data_root), "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 0, res.output
    sbatch = (tmp_path / "r" / ".grid" / "slurm" / "dry-run.sbatch").read_text()
    for line in ("#SBATCH --array=0-1%1", "#SBATCH --partition=gpu-short", "#SBATCH --gpus-per-node=1",
                 "#SBATCH --account=nlp", "#SBATCH --job-name=embench-grid", "#SBATCH --signal=USR2@"):
        assert line in sbatch, line
    assert "%A_%a" in sbatch  # one log per array task
    array = (tmp_path / "r" / ".grid" / "slurm" / "dry-run.array.txt").read_text().splitlines()
    jobs = [json.loads(open(line.split("\t")[1]).read()) for line in array]
    assert [len(j["cells"]) for j in jobs] == [4, 4]  # one job per model: 2 tasks x 2 protocols
    assert {j["model"] for j in jobs} == {str(tiny_bert_dir), str(other)}
    assert not list((tmp_path / "r").glob("*/*.json"))  # nothing ran


def test_a_worker_whose_grid_is_gone_writes_on_into_its_log(tmp_path):
    """A grid killed outright left its workers printing into a pipe nobody read: the first write failed, and the job
    died before storing the cells it had almost finished."""
    from embench.grid.worker_process import _LogWhenOrphaned

    class Gone:
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    log = tmp_path / "job.log"
    log.write_text("relayed by the grid\n")
    stream = _LogWhenOrphaned(Gone(), str(log))
    stream.write("cell 1 stored\n")
    stream.flush()
    stream.write("cell 2 stored\n")
    assert log.read_text() == "relayed by the grid\ncell 1 stored\ncell 2 stored\n"


def test_one_folder_spelt_two_ways_is_one_model_and_protocol_names_are_unique(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "config.json").write_text("{}")  # an empty folder is no model
    spelt = [str(tmp_path / "a"), str(tmp_path / "a") + "/", str(tmp_path / "." / "a"), "all-MiniLM-L6-v2", "all-MiniLM-L6-v2"]
    assert expand_models(spelt) == [str(tmp_path / "a"), "all-MiniLM-L6-v2"]  # was three jobs computing one record
    f = tmp_path / "p.yaml"
    f.write_text("- {name: a}\n- {name: a, aggregation: wmean}\n")
    with pytest.raises(EmbenchError, match=r"entries 1 and 2 share the name 'a'"):
        read_protocols(f)


def test_grid_status_says_a_file_is_a_file_and_json_is_json_alone(tmp_path):
    from embench.grid.status import grid_status

    (tmp_path / "protocols.yaml").write_text("- {}\n")
    with pytest.raises(EmbenchError, match="protocols.yaml: is a file; give the grid's results folder"):
        grid_status(tmp_path / "protocols.yaml")
    res = CliRunner().invoke(app, ["grid", "--models", "all-MiniLM-L6-v2", "-t", "STS12", "--batch-size", "0",
                                   "--results", str(tmp_path / "r")])
    assert res.exit_code != 0 and "--batch-size must be at least 1, got 0" in str(res.exception or res.output)
    assert not (tmp_path / "r").exists()  # before any job (every cell failed inside its worker)


def test_a_local_job_is_done_when_it_exits_though_a_process_it_left_holds_its_output_open(tmp_path, monkeypatch):
    """Before, the grid read a job's output to its end: a job killed with SIGKILL whose encoding processes lived on
    (holding the pipe) kept the grid waiting for them, over ten minutes, before it reported the killed job."""
    import io
    import time

    from embench.grid import local

    monkeypatch.setattr(local, "DRAIN_SECONDS", 0.5)
    script = "echo started; sleep 30 & echo $!; exit 3"  # the sleep holds the pipe, as an orphaned worker did
    log, echo, start = io.BytesIO(), io.StringIO(), time.monotonic()
    rc = local._run_relayed(["sh", "-c", script], dict(os.environ), log, echo, "job-0", set())
    orphan = int(log.getvalue().decode().split()[1])
    os.kill(orphan, 9)
    assert rc == 3 and time.monotonic() - start < 10
    assert echo.getvalue().startswith("[job-0] started\n")


def test_a_later_plan_of_a_model_supersedes_its_cells_of_an_older_one(tmp_path):
    """Before, status took the union of every plan: a model whose truncated weights were repaired (a new fingerprint,
    so new record keys) kept its old failed cells, and a grid whose re-run did every cell reported failures (rc 1)."""
    proto = EvalProtocol().to_dict()
    old, new = ({"fingerprint": f} for f in ("truncated", "repaired"))
    before = [Cell("m", t, proto, record_key(t, old, proto)) for t in ("STS12", "STS13")]
    after = [Cell("m", t, proto, record_key(t, new, proto)) for t in ("STS12", "STS13")]
    state = GridState(tmp_path)
    state.init()
    os.utime(state.save_plan("first", {"cells": [c.to_dict() for c in before]}), (1, 1))  # the older plan
    state.save_plan("second", {"cells": [c.to_dict() for c in after]})
    for c in before:
        state.mark(c, "failed", job="j", error="ModelLoadError: truncated")
    for c in after:
        ResultStore(tmp_path).save(_record(c, new))
    cells, states = grid_status(tmp_path)
    assert sorted(c.id for c in cells) == sorted(c.id for c in after)
    assert summary(states) == {"done": 2, "running": 0, "failed": 0, "missing": 0, "unknown": 0}


@pytest.mark.slow  # imports the worker (and through it torch)
def test_a_grid_job_s_errors_say_the_command_line_s_options(monkeypatch, tmp_path):
    """A grid's job runs embench's Python functions as their outermost caller, so a cell's marker said ``pair_features``
    (Python's name) where the grid's protocols file and `embench grid` say ``--pair-features``."""
    import embench.grid.worker as worker
    from embench.evaluation.protocols import EvalProtocol

    said = []

    def run_job(job, log):
        try:
            EvalProtocol(pair_features="concat")
        except EmbenchError as e:
            said.append(str(e))
        return []

    monkeypatch.setattr(worker, "run_job", run_job)
    monkeypatch.setattr(worker, "terminate_as_interrupt", lambda: None)
    assert worker.main([str(tmp_path / "job.json")]) == 0
    assert "--pair-features" in said[0]
    with pytest.raises(EmbenchError, match="option pair_features"):  # the mark ends with the job: Python's names again
        EvalProtocol(pair_features="concat")
