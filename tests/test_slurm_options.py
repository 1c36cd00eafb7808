"""The Slurm options of ``embench grid`` and ``embench train``: one reading of ``--slurm-option`` for both (train's
keys translated for grid too, sbatch's leading dashes dropped), every number checked and named, and refused where
they would be ignored (without ``--executor slurm``)."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from embench.cli.app import app
from embench.core.errors import EmbenchError
from embench.grid.slurm import SlurmSettings


def test_train_keys_dashes_and_sbatch_options_are_read_the_same_everywhere():
    s = SlurmSettings.from_options(["mem_gb=2", "timeout-min=5", "cpus_per_job=1", "--account=abc", "-qos=high"])
    assert (s.mem_gb, s.timeout_min, s.cpus_per_job, s.extra) == (2.0, 5, 1, {"account": "abc", "qos": "high"})
    params = s.parameters(executor="slurm")
    assert (params["mem"], params["time"], params["cpus_per_task"]) == ("2GB", 5, 1)
    assert SlurmSettings(mem_gb=1.5).parameters(executor="slurm")["mem"] == "1536MB"  # as submitit writes it, not 1GB


@pytest.mark.parametrize(("items", "flags", "message"), [
    (["timeout_min=-5"], {}, "--slurm-option timeout_min=-5: must be at least 1 (minutes)"),
    (["cpus_per_job=0"], {}, "--slurm-option cpus_per_job=0: must be at least 1 (CPUs)"),
    (["gpus_per_job=-1"], {}, "--slurm-option gpus_per_job=-1: must be at least 0 (GPUs)"),
    (["mem_gb=0"], {}, "--slurm-option mem_gb=0: must be at least 0.001 (GB)"),
    (["mem_gb=nan"], {}, "--slurm-option mem_gb=nan: must be at least 0.001 (GB)"),
    (["array_parallelism=0"], {}, "--slurm-option array_parallelism=0: must be at least 1 (tasks at once)"),
    (["mem_gb=lots"], {}, "--slurm-option mem_gb=lots: mem_gb takes a number"),
    ([], {"timeout_min": ("--timeout-min -5", -5)}, "--timeout-min -5: must be at least 1 (minutes)"),
    (["timeout_min=5"], {"timeout_min": ("--timeout-min 30", 30)},
     "--slurm-option timeout_min=5: timeout_min is also given as --timeout-min 30; give it once"),
    (["time=-5"], {}, "--slurm-option time=-5: embench writes sbatch's --time from timeout_min"),
    (["account=a", "--account=b"], {}, "--slurm-option account is given twice"),
])
def test_a_bad_or_repeated_slurm_setting_is_refused_naming_the_option(items, flags, message):
    with pytest.raises(EmbenchError) as e:
        SlurmSettings.from_options(items, flags=flags)
    assert str(e.value).startswith(message)


def test_settings_made_in_python_are_checked_too():
    with pytest.raises(EmbenchError, match=r"SlurmSettings\(timeout_min=-5\): must be at least 1"):
        SlurmSettings(timeout_min=-5)


@pytest.mark.parametrize(("args", "message"), [
    (["grid", "-m", "m", "-t", "STS16", "--results", "{tmp}/r", "--slurm-option", "mem_gb=lots", "--slurm-partition",
      "nope", "--timeout-min", "1", "--gpus-per-job", "2"],
     "--slurm-option mem_gb=lots, --slurm-partition nope, --gpus-per-job 2, --timeout-min 1: only with --executor slurm"),
    (["train", "--method", "crop", "-m", "m", "--out", "{tmp}/r", "--seeds", "1", "--slurm-option", "partition=nope",
      "--slurm-option", "mem_gb=lots"],
     "--slurm-option partition=nope, mem_gb=lots: applies only with --executor slurm"),
    (["grid", "--executor", "slurm", "-m", "m", "-t", "STS16", "--results", "{tmp}/r", "--timeout-min", "-5"],
     "--timeout-min -5: must be at least 1 (minutes)"),
    (["grid", "--executor", "slurm", "-m", "m", "-t", "STS16", "--results", "{tmp}/r", "--array-parallelism", "0"],
     "--array-parallelism 0: must be at least 1 (tasks at once)"),
])
def test_slurm_options_are_refused_where_they_would_be_ignored_or_wrong(args, message, tmp_path):
    res = CliRunner().invoke(app, [a.replace("{tmp}", str(tmp_path)) for a in args])
    assert isinstance(res.exception, EmbenchError) and str(res.exception).startswith(message), res.output
    assert not (tmp_path / "r").exists()  # refused before anything is planned, trained or written


@pytest.mark.slow  # plans a grid (one tiny model)
def test_grids_slurm_options_reach_the_sbatch_file_as_sbatch_options(tiny_bert_dir, data_root, tmp_path):
    res = CliRunner().invoke(app, [
        "grid", "--executor", "slurm", "--dry-run", "-m", str(tiny_bert_dir), "-t", "STS16", "--results", str(tmp_path / "r"),
        "--data", str(data_root), "--cache-dir", str(tmp_path / "cache"), "--slurm-option", "mem_gb=2",
        "--slurm-option", "cpus_per_job=1", "--slurm-option=--account=abc", "--timeout-min", "5"])
    assert res.exit_code == 0, res.output
    lines = (tmp_path / "r" / ".grid" / "slurm" / "dry-run.sbatch").read_text().splitlines()
    for line in ("#SBATCH --mem=2GB", "#SBATCH --cpus-per-task=1", "#SBATCH --account=abc", "#SBATCH --time=5"):
        assert line in lines
    assert not [x for x in lines if "mem-gb" in x or "----" in x or "cpus-per-job" in x]


@pytest.mark.slow  # a subprocess
def test_sbatch_refusing_a_trains_array_names_the_option_train_has(tmp_path, monkeypatch):
    """train has no --slurm-partition: its error names --slurm-option."""
    from embench.train.config import TrainConfig
    from embench.train.seeds import submit_seeds

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text("#!/bin/sh\necho 'sbatch: error: invalid partition specified: nope' >&2\nexit 1\n")
    (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(EmbenchError) as e:
        submit_seeds(TrainConfig(out=str(tmp_path / "grp")), [1], SlurmSettings(partition="nope"))
    assert str(e.value).endswith("check that `sinfo` reaches the cluster and the --slurm-option values)")
    assert "--slurm-partition" not in str(e.value)
