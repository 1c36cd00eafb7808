"""Training on a real Slurm cluster started on this machine (tests/slurm_cluster.py): ``srun --ntasks 2 embench
train`` is one DDP run over the two tasks, and ``embench train --seeds 1-3 --executor slurm`` one array task per
seed, read back as one seed group."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from embench.cli.app import app
from embench.evaluation.seed_groups import read_seed_group

TRAIN = ["train", "--method", "unsup-simcse", "--batch-size", "8", "--max-length", "16", "--eval-steps", "0",
         "--device", "cpu", "--set", "log_steps=1", "-q"]


@pytest.fixture(scope="module")
def corpus(data_root, tmp_path_factory) -> Path:
    """200 Wikipedia sentences of the data root (SimCSE's unsupervised corpus)."""
    path = tmp_path_factory.mktemp("slurm-corpus") / "wiki200.txt"
    lines = gzip.open(data_root / "corpora" / "wiki1m-prefix.txt.gz", "rt", encoding="utf-8").read().splitlines()[:200]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _losses(out: Path) -> list[float]:
    return [json.loads(line)["loss"] for line in (out / "metrics.jsonl").read_text().splitlines() if '"loss"' in line]


def _world_size(out: Path) -> int:
    return json.loads((out / "train_config.json").read_text())["world_size"]


@pytest.mark.slow
def test_srun_with_two_tasks_trains_one_ddp_run_with_the_loss_curve_of_two_local_processes(
        slurm, tiny_bert_dir, corpus, tmp_path):
    args = [*TRAIN, "-m", str(tiny_bert_dir), "--train-data", str(corpus), "--max-steps", "6"]
    # rank, world size and rendezvous from Slurm's variables (SLURM_PROCID, SLURM_NTASKS, the node list, the job id);
    # beside it, the same run as two local processes (torchrun), outside any Slurm job
    local_env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    runs = {
        "srun": subprocess.Popen(["srun", "--ntasks", "2", sys.executable, "-m", "embench.cli", *args, "--out",
                                  str(tmp_path / "srun")], env=slurm.env(OMP_NUM_THREADS="1"),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
        "local": subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                                   "-m", "embench.cli", *args, "--out", str(tmp_path / "local")],
                                  env={**local_env, "OMP_NUM_THREADS": "1"}, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True),
    }
    out = {name: proc.communicate(timeout=300) for name, proc in runs.items()}
    assert runs["srun"].returncode == 0, out["srun"][1]
    assert runs["local"].returncode == 0, out["local"][1]
    assert _world_size(tmp_path / "srun") == _world_size(tmp_path / "local") == 2
    assert len(_losses(tmp_path / "srun")) == 6
    assert _losses(tmp_path / "srun") == pytest.approx(_losses(tmp_path / "local"), abs=1e-6)
    assert out["srun"][0].count("kept: ") == 1  # rank 0 reports; rank 1 trained beside it


@pytest.mark.slow
def test_seeds_as_slurm_array_tasks_make_the_seed_group_that_run_reads(
        slurm, tiny_bert_dir, corpus, data_root, tmp_path, one_thread):
    out = tmp_path / "group"
    base = [*TRAIN, "-m", str(tiny_bert_dir), "--train-data", str(corpus), "--max-steps", "4"]
    args = [*base, "--out", str(out), "--seeds", "1-3", "--executor", "slurm", "--slurm-option", "cpus_per_job=1"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert f"seeds 1, 2, 3 -> {out}/seed-N (logs in {out}/slurm/)" in res.output
    array = re.search(r"submitted Slurm array (\d+)", res.output).group(1)
    # submitted again while the array runs: no seed twice (a second task would fail on the first one's lock)
    during = CliRunner().invoke(app, args)
    assert during.exit_code == 0 and "nothing submitted" in during.output, during.output
    assert "submitted Slurm array" not in during.output and f"not submitted again: its Slurm job {array}_" in during.output
    assert slurm.wait(array) == {f"{array}_{i}": "COMPLETED" for i in range(3)}
    group = read_seed_group(out)
    assert group.seeds == [1, 2, 3]
    for s in (1, 2, 3):  # each task kept its model, not its resume state (as --seeds does here)
        assert (out / f"seed-{s}" / "best" / "model.safetensors").is_file()
        assert not (out / f"seed-{s}" / "checkpoint-last").exists()
    # seed 2 trained here, in this process, is the run its array task made
    here = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "here"), "--seeds", "2"])
    assert here.exit_code == 0, here.output
    assert _losses(out / "seed-2") == pytest.approx(_losses(tmp_path / "here" / "seed-2"), abs=1e-6)
    assert _losses(out / "seed-1") != pytest.approx(_losses(out / "seed-2"), abs=1e-6)  # the seeds differ
    # `embench run` reads the folder as one model, the mean over its seeds
    run = CliRunner().invoke(app, ["run", "-m", str(out), "-t", "STS16", "--data", str(data_root), "--results-dir",
                                   str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache"), "-q"])
    assert run.exit_code == 0 and "group (mean of 3 seeds)" in run.output, run.output
    # submitted again: every seed is in the group, nothing goes to Slurm
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and "every seed is trained already; nothing submitted" in again.output, again.output
