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
