"""kill -9 at any write embench makes loses nothing finished and leaves nothing that is later trusted (issue 35).

A process is killed just before its K-th ``os.replace`` (every embench write goes to a temporary file that
is then renamed: cache shards, records, per-item outcomes): the temporary file is fully or partly written
and never renamed, the state a kill -9 inside the write leaves. The next run must finish with the score a
clean run gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

KILLER = """
import os, signal, sys
count = [0]
real = os.replace
def replace(src, dst, *a, **k):
    count[0] += 1
    if count[0] == int(os.environ["KILL_AT"]):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(src, dst, *a, **k)
os.replace = replace
sys.argv = ["embench"] + sys.argv[1:]
from embench.cli.app import main
main()
"""


@pytest.mark.slow
def test_a_run_killed_at_each_of_its_first_writes_finishes_with_the_clean_score(env, tiny_bert_dir):
    args = ["run", "-m", str(tiny_bert_dir), "-t", "STS12", "-t", "STS13", "--format", "json", "-q", "--batch-size", "512"]
    clean_env = {**os.environ, "EMBENCH_RESULTS": str(env / "clean-results"), "EMBENCH_CACHE": str(env / "clean-cache")}
    clean = subprocess.run([sys.executable, "-c", KILLER, *args], env={**clean_env, "KILL_AT": "0"},
                           capture_output=True, text=True, check=True)
    want = json.loads(clean.stdout)
    codes = []
    for k in range(1, 6):
        killed = subprocess.run([sys.executable, "-c", KILLER, *args], env={**os.environ, "KILL_AT": str(k)},
                                capture_output=True, text=True)
        assert killed.returncode in (-9, 0), killed.stderr  # 0: the runs before left less to write than k
        codes.append(killed.returncode)
    assert codes[0] == -9 and codes.count(-9) >= 2, codes
    again = subprocess.run([sys.executable, "-c", KILLER, *args], env={**os.environ, "KILL_AT": "0"},
                           capture_output=True, text=True, check=True)
    assert json.loads(again.stdout) == want


def test_a_temporary_shard_left_by_a_dead_writer_is_swept_and_a_fresh_one_kept(tmp_path):
    from embench.encoding.cache import STALE_SECONDS, EmbeddingCache

    folder = tmp_path / "ns"
    folder.mkdir()
    old, fresh = folder / ".a.npz.tmp", folder / ".b.npz.tmp"
    old.write_bytes(b"half a shard")
    fresh.write_bytes(b"being written")
    past = time.time() - STALE_SECONDS - 5
    os.utime(old, (past, past))
    EmbeddingCache(tmp_path, "ns").stored(["k"])
    assert not old.exists() and fresh.exists()


@pytest.mark.slow
def test_training_killed_at_each_checkpoint_write_resumes_to_the_uninterrupted_model(tmp_path, data_root, tiny_bert_dir):
    from safetensors.torch import load_file

    def args(out):
        return ["train", "--method", "crop", "-m", str(tiny_bert_dir), "--train-data", "20newsgroups", "--data", str(data_root),
                "--out", str(out), "--batch-size", "8", "--max-length", "32", "--max-examples", "200", "--max-steps", "6",
                "--save-steps", "2", "--eval-steps", "0", "-q"]

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-c", KILLER, *args(tmp_path / "clean")], env={**env, "KILL_AT": "0"}, check=True,
                   capture_output=True)
    want = load_file(tmp_path / "clean" / "best" / "model.safetensors")
    out = tmp_path / "cut"
    first = subprocess.run([sys.executable, "-c", KILLER, *args(out)], env={**env, "KILL_AT": "3"}, capture_output=True, text=True)
    # a resume state is two renames (state.pt, step.json): the third is the step-4 state, cut before it lands
    assert first.returncode == -9, first.stderr
    again = subprocess.run([sys.executable, "-c", KILLER, *args(out), "--resume"], env={**env, "KILL_AT": "0"},
                           capture_output=True, text=True)
    assert again.returncode == 0, again.stderr  # the lock of the killed run is taken over, training goes on from step 2
    got = load_file(out / "best" / "model.safetensors")
    assert max(float((want[k] - got[k]).abs().max()) for k in want) < 1e-5


@pytest.mark.slow  # over a second (the fast tier stays under a minute)
def test_a_download_killed_at_its_write_leaves_no_file_and_the_next_one_completes(tmp_path):
    import gzip
    import hashlib
    import http.server
    import threading
    from functools import partial

    served = tmp_path / "served"
    served.mkdir()
    (served / "a.txt").write_bytes(b"line\n" * 100)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(http.server.SimpleHTTPRequestHandler, directory=str(served)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        manifest = tmp_path / "manifest.json"
        manifest.write_text(json.dumps({"version": 1, "files": [{
            "path": "corpora/a.txt.gz", "task": "corpora", "url": f"http://127.0.0.1:{server.server_address[1]}/a.txt",
            "sha256": hashlib.sha256(b"line\n" * 100).hexdigest(), "compress": True}]}))
        root = tmp_path / "data"
        args = ["data", "download", "--data", str(root), "--manifest", str(manifest)]
        killed = subprocess.run([sys.executable, "-c", KILLER, *args], env={**os.environ, "KILL_AT": "1"}, capture_output=True)
        assert killed.returncode == -9
        assert not (root / "corpora" / "a.txt.gz").exists()  # only a hidden temporary file, never read as the data
        done = subprocess.run([sys.executable, "-c", KILLER, *args], env={**os.environ, "KILL_AT": "0"}, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert gzip.decompress((root / "corpora" / "a.txt.gz").read_bytes()) == b"line\n" * 100
    finally:
        server.shutdown()
