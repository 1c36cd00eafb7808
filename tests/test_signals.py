"""SIGTERM (Slurm, timeout, docker stop) stops embench as Ctrl-C does: finished work kept, a message, status 143."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest


@pytest.mark.slow
def test_sigterm_mid_encoding_keeps_the_encoded_texts_and_says_how_to_resume(env):
    cache = env / "cache"
    cmd = [sys.executable, "-m", "embench.cli", "run", "-m", "all-MiniLM-L6-v2", "--suite", "sts-all", "--batch-size", "16"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env={**os.environ, "EMBENCH_PROGRESS_EVERY": "0"})
    lines = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the first progress lines: encoding has started
        line = proc.stderr.readline()
        lines.append(line)
        if line.startswith("encoding all-MiniLM-L6-v2:") and int(line.split()[2].split("/")[0]) > 0:
            break
    proc.send_signal(signal.SIGTERM)
    rest = proc.communicate(timeout=120)[1]
    assert proc.returncode == 143, "".join(lines) + rest
    assert "interrupted" in rest and "/26083 texts" in "".join(lines) and "run the same command again" in rest and "Traceback" not in rest
    assert any(p.is_file() and p.suffix == ".npz" for p in cache.rglob("*")), "no cache shard was written"


@pytest.mark.parametrize(("command", "advice"), [("train", "--grad-accumulation"), ("run", "--batch-tokens")])
def test_out_of_memory_is_one_message_with_what_to_set(monkeypatch, capsys, command, advice):
    import importlib

    import torch

    cli = importlib.import_module("embench.cli.app")  # the module (embench.cli.app is also the Typer object's name)

    def boom(**kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.1 GiB total)")

    monkeypatch.setattr(cli, "app", boom)
    monkeypatch.setattr(sys, "argv", ["embench", command, "--model", "m"])
    with pytest.raises(SystemExit) as done:
        cli.main()
    err = capsys.readouterr().err
    assert done.value.code == 3 and "Traceback" not in err
    assert err.startswith("error: out of GPU memory (CUDA out of memory. Tried to allocate 2.00 GiB") and advice in err
    assert err.count("\n") == 1


@pytest.mark.slow
def test_sigterm_mid_training_keeps_the_last_checkpoint_and_says_to_resume(tmp_path, data_root, tiny_bert_dir):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "embench.cli", "train", "--method", "crop", "-m", str(tiny_bert_dir), "--train-data",
           "20newsgroups", "--data", str(data_root), "--out", str(out), "--batch-size", "8", "--max-length", "32",
           "--max-examples", "200", "--max-steps", "100000", "--save-steps", "2", "--eval-steps", "0"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env={**os.environ, "EMBENCH_PROGRESS_EVERY": "0"})
    deadline = time.monotonic() + 120
    while not (out / "checkpoint-last" / "state.pt").is_file() and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 143, err
    assert "interrupted" in err and "--resume" in err and "Traceback" not in err
    assert (out / "checkpoint-last" / "state.pt").is_file() and not (out / ".embench-train.lock").exists()


@pytest.mark.parametrize(("argv", "patched", "said"), [
    (["compare", "-m", "a", "-m", "b"], "compare", "interrupted: what was finished is kept"),  # catches nothing itself
    (["run", "-m", "a", "-t", "STS12"], "evaluate", "interrupted: finished tasks are stored"),  # says its own line
])
def test_an_interrupt_says_how_to_go_on_once_whichever_command_it_stops(monkeypatch, capsys, argv, patched, said):
    """typer 0.29 returns an interrupt no command caught as exit 130 without a word (audit, compare, analyze...)."""
    import importlib

    import embench.api
    import embench.cli.output as output

    cli = importlib.import_module("embench.cli.app")

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(embench.api, patched, stop)
    monkeypatch.setattr(sys, "argv", ["embench", *argv])
    monkeypatch.setattr(output, "_interrupt_said", [])
    with pytest.raises(SystemExit) as done:
        cli.main()
    err = " ".join(capsys.readouterr().err.split())
    assert done.value.code == 130 and said in err and err.count("interrupted") == 1, err
