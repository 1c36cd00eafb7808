"""Grids run for real: two tiny random BERTs x three STS tasks x two protocols, through the local
executor (processes) and submitit's executors, against a serial ``embench run`` of the same cells."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from embench.cli.app import app
from embench.evaluation.results import ResultStore
from embench.grid import GridSpec, grid_status, run_grid

TASKS = ["STSBenchmark", "STS16", "STS13"]
PROTOCOLS = [{}, {"name": "wmean-pearson", "aggregation": "wmean", "correlation": "pearson"}]
PROTOCOLS_YAML = "- {}\n- {name: wmean-pearson, aggregation: wmean, correlation: pearson}\n"


@pytest.fixture(scope="module")
def models(tmp_path_factory, minilm_path) -> list[str]:
    """Two randomly initialised 2-layer BERTs (hidden 32, seeds 0 and 1) with MiniLM's tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    folder = tmp_path_factory.mktemp("grid-models")
    tok = AutoTokenizer.from_pretrained(minilm_path)
    out = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=512)
        BertModel(cfg).save_pretrained(folder / f"tiny-{seed}")
        tok.save_pretrained(folder / f"tiny-{seed}")
        out.append(str(folder / f"tiny-{seed}"))
    return out


@pytest.fixture(scope="module")
def serial(models, data_root, tmp_path_factory, one_thread) -> Path:
    """The same cells by ``embench run``, one model and protocol after another (one torch thread, as each
    of two grid workers on two cores gets)."""
    results = tmp_path_factory.mktemp("serial")
    cache = tmp_path_factory.mktemp("serial-cache")
    runner = CliRunner()
    for model in models:
        for proto in PROTOCOLS:
            flags = [x for k, v in proto.items() if k != "name" for x in (f"--{k}", v)]
            args = ["run", "-m", model, *(x for t in TASKS for x in ("-t", t)), *flags, "--results-dir", str(results),
                    "--cache-dir", str(cache), "--data", str(data_root), "-q"]
            res = runner.invoke(app, args)
            assert res.exit_code == 0, res.output
    return results


def _records(results: Path) -> dict[str, dict]:
    return {str(p.relative_to(results)): json.loads(p.read_text()) for p in sorted(results.glob("*/*.json"))}


def _same_records(grid: Path, serial: Path) -> None:
    got, want = _records(grid), _records(serial)
    assert sorted(got) == sorted(want) and len(want) == 12
    for name, w in want.items():
        g = got[name]
        for f in ("task", "model", "key", "protocol", "encoder"):
            assert g[f] == w[f], (name, f)
        assert g["main_score"] == pytest.approx(w["main_score"], abs=1e-6), name
        assert _numbers(g["scores"]) == pytest.approx(_numbers(w["scores"]), abs=1e-6), name


def _numbers(tree, prefix="") -> dict[str, float]:
    """Every number of a nested dict, by its path (scores hold per-subset dicts)."""
    if isinstance(tree, dict):
        return {k: v for key, sub in tree.items() for k, v in _numbers(sub, f"{prefix}/{key}").items()}
    return {prefix: float(tree)} if isinstance(tree, (int, float)) and not isinstance(tree, bool) else {}


def _spec(models, data_root, cache) -> GridSpec:
    return GridSpec(models=list(models), tasks=TASKS, protocols=PROTOCOLS, data=str(data_root), cache_dir=str(cache))


@pytest.mark.slow
def test_two_local_workers_give_the_records_of_a_serial_run(models, serial, data_root, tmp_path):
    protocols = tmp_path / "protocols.yaml"
    protocols.write_text(PROTOCOLS_YAML)
    pattern = str(Path(models[0]).parent / "tiny-*")
    res = CliRunner().invoke(app, ["grid", "--models", pattern, *(x for t in TASKS for x in ("-t", t)),
                                   "--protocols", str(protocols), "--results", str(tmp_path / "grid"),
                                   "--workers", "2", "--data", str(data_root), "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 0, res.output
    _same_records(tmp_path / "grid", serial)
    # one job per model: each loaded once for its six cells
    jobs = sorted((tmp_path / "grid" / ".grid" / "jobs").glob("*.json"))
    assert [len(json.loads(j.read_text())["cells"]) for j in jobs] == [6, 6]
    # the second protocol read every text from the cache the first one wrote
    for r in _records(tmp_path / "grid").values():
        if r["protocol"]["correlation"] == "pearson":
            assert r["provenance"]["texts_encoded"] == 0, r["task"]
    # a second run finds every cell done and submits nothing
    again = run_grid(_spec(models, data_root, tmp_path / "cache"), tmp_path / "grid", workers=2)
    assert again.jobs == [] and again.count("done") == 12


@pytest.mark.slow
def test_a_killed_worker_then_a_rerun_fills_only_the_missing_cells(models, serial, data_root, tmp_path):
    results, protocols = tmp_path / "grid", tmp_path / "protocols.yaml"
    protocols.write_text(PROTOCOLS_YAML)
    cmd = [sys.executable, "-m", "embench.cli", "grid", *(x for m in models for x in ("--models", m)),
           *(x for t in TASKS for x in ("-t", t)), "--protocols", str(protocols), "--results", str(results),
           "--workers", "2", "--data", str(data_root), "--cache-dir", str(tmp_path / "cache")]
    grid = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    victim_markers = results / ".grid" / "cells" / "tiny-1"
    deadline, killed = time.time() + 120, None
    while killed is None and time.time() < deadline and grid.poll() is None:
        for m in victim_markers.glob("*.json") if victim_markers.is_dir() else []:
            try:
                marker = json.loads(m.read_text())
            except ValueError:
                continue
            if marker.get("state") == "running":
                killed = marker["pid"]
                os.kill(killed, signal.SIGKILL)
                break
        time.sleep(0.05)
    out = grid.communicate(timeout=300)[0].decode()
    assert killed is not None, out
    assert grid.returncode == 1, out  # not every cell is done, and the table says which
    cells, states = grid_status(results)
    left = {c.id for c in cells if states[c.id]["state"] != "done"}
    assert left and all(c.startswith("tiny-1/") for c in left)
    assert all("killed" in states[c]["error"] and states[c]["log"] for c in left)
    before = {p: p.stat().st_mtime_ns for p in results.glob("*/*.json")}
    again = run_grid(_spec(models, data_root, tmp_path / "cache"), results, workers=2)
    assert {c.id for j in again.jobs for c in j.cells} == left  # only what was missing
    assert again.count("done") == 12
    assert all(p.stat().st_mtime_ns == t for p, t in before.items())  # the finished cells were not redone
    _same_records(results, serial)


@pytest.mark.slow
def test_a_crashing_job_is_marked_failed_with_its_log_and_a_rerun_retries_only_failed_and_missing(models, data_root, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(models[0], broken)
    (broken / "model.safetensors").write_bytes(b"not a safetensors file")
    spec = GridSpec(models=[models[1], str(broken)], tasks=["STS16", "STSBenchmark"], protocols=[{}],
                    data=str(data_root), cache_dir=str(tmp_path / "cache"))
    results = tmp_path / "grid"
    first = run_grid(spec, results, workers=2)
    assert first.count("done") == 2 and first.count("failed") == 2
    for cell in first.cells:
        st = first.states[cell.id]
        if cell.model == str(broken):
            assert st["state"] == "failed" and Path(st["log"]).is_file()
            assert "broken" in st["error"] or "safetensors" in st["error"].lower() or "weights" in st["error"]
            assert "Traceback" in Path(st["log"]).read_text()
    store = ResultStore(results)
    good = [c for c in first.cells if c.model == models[1]]
    kept, lost = store.path(good[0].model, good[0].task, good[0].key), store.path(good[1].model, good[1].task, good[1].key)
    lost.unlink()  # a missing cell beside the failed ones
    mtime = kept.stat().st_mtime_ns
    second = run_grid(spec, results, workers=2)
    retried = {c.id for j in second.jobs for c in j.cells}
    assert retried == {c.id for c in first.cells if c.model == str(broken)} | {good[1].id}
    assert kept.stat().st_mtime_ns == mtime and lost.is_file()
    # the status command says the same, with the log of each failure
    res = CliRunner().invoke(app, ["grid", "status", str(results)])
    assert res.exit_code == 1 and "failed" in res.output and ".log" in res.output


@pytest.mark.slow
def test_the_slurm_path_runs_through_submitit_without_a_cluster(models, data_root, tmp_path):
    """submitit's local executor (subprocesses) runs the job array the Slurm executor submits, through the
    same checkpointable GridJob; each job logs where submitit puts Slurm logs."""
    from embench.grid.slurm import SlurmSettings

    spec = GridSpec(models=list(models), tasks=["STSBenchmark"], protocols=[{}], data=str(data_root),
                    cache_dir=str(tmp_path / "cache"))
    p = run_grid(spec, tmp_path / "grid", executor="slurm", slurm=SlurmSettings(timeout_min=10), cluster="local")
    assert len(p.submitted) == 2 and p.count("done") == 2
    logs = list((tmp_path / "grid" / ".grid" / "slurm").glob("*/*_log.err"))
    assert len(logs) == 2 and all("job " in f.read_text() for f in logs)
    assert len(list((tmp_path / "grid").glob("tiny-*/STSBenchmark-*.json"))) == 2


@pytest.mark.slow
def test_two_grids_started_at_once_on_one_results_folder_give_the_serial_records(models, serial, data_root, tmp_path):
    protocols = tmp_path / "protocols.yaml"
    protocols.write_text(PROTOCOLS_YAML)
    args = [sys.executable, "-m", "embench.cli", "grid", "--models", str(Path(models[0]).parent / "tiny-*"),
            *(x for t in TASKS for x in ("-t", t)), "--protocols", str(protocols), "--results", str(tmp_path / "grid"),
            "--workers", "1", "--data", str(data_root), "--cache-dir", str(tmp_path / "cache")]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    first, second = (subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env) for _ in range(2))
    errs = [p.communicate(timeout=600)[1] for p in (first, second)]
    assert all("Traceback" not in e for e in errs), errs
    again = run_grid(_spec(models, data_root, tmp_path / "cache"), tmp_path / "grid", workers=1)  # whatever either left
    assert again.count("done") == 12
    _same_records(tmp_path / "grid", serial)
