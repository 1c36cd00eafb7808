"""Encoding sharded over devices (one process each) gives one device's vectors: checked on CPU with
``cpu,cpu``, the way ``--devices cuda:0,cuda:1`` runs on a GPU node."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from embench.core.errors import EmbenchError
from embench.encoding.engine import Engine
from embench.grid.sharded import parse_devices, prefill_sharded, split_texts
from embench.models.device_choice import pick_device
from embench.models.loader import load_model


def test_texts_are_split_once_each_into_near_equal_shares():
    texts = ["a", "bb", "a", "ccc", "dddd", "ee", "f"]
    shares = split_texts(texts, 2)
    assert sorted(t for s in shares for t in s) == sorted(set(texts))
    assert abs(len(shares[0]) - len(shares[1])) <= 1
    assert parse_devices("cuda:0, cuda:1") == ["cuda:0", "cuda:1"] and parse_devices(None) == []
    with pytest.raises(EmbenchError, match="no device named"):
        parse_devices(",")


@pytest.mark.slow
def test_two_cpu_processes_fill_the_cache_with_the_vectors_one_process_computes(tiny_bert_dir, tmp_path, one_thread,
                                                                                 capfd, monkeypatch):
    texts = [f"sentence number {i} " + "word " * (i % 13) for i in range(300)] + ["sentence number 3 "]
    monkeypatch.setenv("EMBENCH_PROGRESS_EVERY", "0")  # a progress line per batch off a terminal (else every 30 s)
    prefill_sharded(str(tiny_bert_dir), {"dtype": "fp32"}, texts, ["cpu", "cpu"], tmp_path / "cache", batch_size=32,
                    progress=True)
    # before, the processes encoded without a progress line: minutes of silence in a log; now the first one says it
    assert "encoding" in capfd.readouterr().err
    encoder = load_model(tiny_bert_dir, dtype="fp32", device="cpu")
    from_shards = Engine(encoder, batch_size=32, cache_dir=tmp_path / "cache")
    got = from_shards.embed(texts)
    assert from_shards.stats["encoded"] == 0 and from_shards.stats["from_cache"] == len(set(texts))
    want = Engine(encoder, batch_size=32, cache_dir=None).embed(texts)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)  # batch neighbours differ: float noise only


@pytest.mark.slow
def test_run_on_two_devices_scores_as_on_one(env, tiny_bert_dir, monkeypatch):
    """``embench run --device cpu,cpu``: two processes encode, the run reads their vectors from the cache."""
    import embench

    one = embench.evaluate(str(tiny_bert_dir), tasks=["STS12"], device="cpu", save=False, use_cache=False)
    two = embench.evaluate(str(tiny_bert_dir), tasks=["STS12"], device="cpu,cpu", save=False)
    # every vector came from the two processes, through the cache: counted as encoded by the run, with the pass's
    # time (before, the stats and the record said nothing was encoded, in no time: all read from the cache)
    assert two.encode_stats["encoded"] == one.encode_stats["unique"] > 0 and two.encode_stats["from_cache"] == 0
    prov = two.records[0].provenance
    assert prov["texts_encoded"] == one.records[0].provenance["texts_encoded"] and prov["texts_from_cache"] == 0
    assert prov["encode_seconds"] > 0.5 and two.encode_stats["encode_seconds"] > 0.5  # the processes' load and pass
    assert abs(two.records[0].main_score - one.records[0].main_score) < 1e-6
    with pytest.raises(EmbenchError, match="drop use_cache=False"):
        embench.evaluate(str(tiny_bert_dir), tasks=["STS12"], device="cpu,cpu", save=False, use_cache=False)
    import embench.models.devices as devices

    # everything is cached now: no process is started, no model loaded again
    monkeypatch.setattr(devices, "prefill_sharded", lambda *a, **k: pytest.fail("started processes for cached texts"))
    again = embench.evaluate(str(tiny_bert_dir), tasks=["STS12"], device="cpu,cpu", save=False)
    assert again.encode_stats["from_cache"] == one.encode_stats["unique"]


def test_a_one_device_step_names_the_commands_that_take_several(tiny_bert_dir):
    with pytest.raises(EmbenchError, match="several devices .* split the encoding passes of `embench run`"):
        load_model(tiny_bert_dir, device="cuda:0,cuda:1")


@pytest.mark.slow
def test_analyze_and_audit_split_their_passes_over_two_processes(env, tiny_bert_dir, monkeypatch):
    """The views of one pass (the audit's poolings, an analysis's layers) come from the processes' shards."""
    import embench.models.devices as sharded
    from embench.analysis import run as run_analysis
    from embench.audit.passes import PassLog, shared_pass

    calls = []
    real = sharded.prefill_sharded
    monkeypatch.setattr(sharded, "prefill_sharded", lambda *a, **k: calls.append(k.get("views")) or real(*a, **k))
    texts = [f"a sentence of {i} words" + " more" * (i % 7) for i in range(60)]
    base = load_model(tiny_bert_dir, device="cpu", pooling="cls")
    engine = shared_pass(base, ["mean", "max"], texts, env / "cache", None, False, PassLog(), ["cpu", "cpu"])
    assert calls and [v[1] for v in calls[-1]] == ["cls", "mean", "max"]
    assert engine.stats["encoded"] == len(set(texts)) and engine.stats["from_cache"] == 0  # by this pass's processes
    np.testing.assert_allclose(engine.embed(texts), Engine(base, cache_dir=None).embed(texts), atol=1e-5)

    out = run_analysis("layers", [str(tiny_bert_dir)], env / "layers", device="cpu,cpu", dataset=None)
    assert len(calls) >= 2 and len(calls[-1]) == 3  # the embedding output and both layers, from one split pass
    single = run_analysis("layers", [str(tiny_bert_dir)], env / "layers1", device="cpu", use_cache=False, dataset=None)
    np.testing.assert_allclose(out.tables["layers"]["stsb_spearman"], single.tables["layers"]["stsb_spearman"], atol=1e-6)


@pytest.mark.parametrize(("device", "message"), [
    ("cpu,cuda:99", "device='cuda:99': this machine has"), ("cpu,gpu", "device='gpu' is not a device"),
    (",", "device=',': no device named; e.g. device='cuda:0,cuda:1'"),
])
def test_every_listed_device_is_checked_before_the_model_loads_naming_run_s_option(env, device, message):
    """Before, only the first device was checked up front: a device this machine lacks was found by its worker once
    the model had loaded and the other workers had encoded their share, and ``--device ,`` named ``--devices``,
    an option run does not have. (From Python the option is evaluate's parameter, ``device=``.)"""
    import embench

    with pytest.raises(EmbenchError, match=re.escape(message)):  # a model that does not exist: never loaded
        embench.evaluate(str(env / "no-such-model"), tasks=["STS12"], device=device, save=False)
    assert parse_devices("cpu,cpu", "--device") == ["cpu", "cpu"]
    with pytest.raises(EmbenchError, match=re.escape("--devices 'cuda:99'")):  # grid's option for grid's devices
        pick_device("cuda:99", "--devices")


@pytest.mark.slow
def test_an_interrupt_stops_the_encoding_processes_instead_of_waiting_for_their_shares(tiny_bert_dir, tmp_path):
    """Before, Ctrl-C or SIGTERM left ``with ProcessPoolExecutor``, whose exit waited until every process had encoded
    its whole share (a SIGTERM'd ``run --device cpu,cpu`` went on for a minute); now they are stopped at once."""
    import multiprocessing
    import signal
    import threading
    import time

    texts = [f"sentence {i} " + "many words here " * 30 for i in range(10000)]  # a minute of encoding per process
    # a real signal to the main thread, as Ctrl-C sends (interrupt_main does not wake a blocked wait)
    timer = threading.Timer(8.0, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        prefill_sharded(str(tiny_bert_dir), {"dtype": "fp32"}, texts, ["cpu", "cpu"], tmp_path / "cache", batch_size=8)
    timer.cancel()
    assert time.monotonic() - start < 30 and not multiprocessing.active_children()


@pytest.mark.slow
def test_an_encoding_process_whose_parent_was_killed_outright_exits(tmp_path):
    """Before, a grid job killed with SIGKILL left its encoding processes orphaned: they encoded on and held the job's
    output pipe, so the grid never saw the job end. Each now watches its parent and exits once it is gone."""
    import subprocess
    import sys
    import time

    child = ("import sys, time; from embench.models.devices import _watch_parent; "
             "_watch_parent(int(sys.argv[1])); time.sleep(60)")
    out = subprocess.run(["sh", "-c", f'"{sys.executable}" -c "{child}" $$ > /dev/null & echo $!'],  # sh exits at once
                         capture_output=True, text=True, check=True).stdout
    status = Path(f"/proc/{int(out)}/status")
    deadline = time.monotonic() + 30
    while status.exists() and "zombie" not in status.read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not status.exists() or "zombie" in status.read_text()
