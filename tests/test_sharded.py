"""Encoding sharded over devices (one process each) gives one device's vectors: checked on CPU with
``cpu,cpu``, the way ``--devices cuda:0,cuda:1`` runs on a GPU node."""

from __future__ import annotations

import numpy as np
import pytest

from embench.core.errors import EmbenchError
from embench.encoding.engine import Engine
from embench.grid.sharded import parse_devices, prefill_sharded, split_texts
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
def test_two_cpu_processes_fill_the_cache_with_the_vectors_one_process_computes(tiny_bert_dir, tmp_path, one_thread):
    texts = [f"sentence number {i} " + "word " * (i % 13) for i in range(300)] + ["sentence number 3 "]
    prefill_sharded(str(tiny_bert_dir), {"dtype": "fp32"}, texts, ["cpu", "cpu"], tmp_path / "cache", batch_size=32)
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
    assert two.encode_stats["encoded"] == 0  # every vector came from the two processes, through the cache
    assert two.encode_stats["from_cache"] == one.encode_stats["unique"] > 0
    assert abs(two.records[0].main_score - one.records[0].main_score) < 1e-6
    with pytest.raises(EmbenchError, match="drop --no-cache"):
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
    assert engine.stats["encoded"] == 0 and engine.stats["from_cache"] == len(set(texts))
    np.testing.assert_allclose(engine.embed(texts), Engine(base, cache_dir=None).embed(texts), atol=1e-5)

    out = run_analysis("layers", [str(tiny_bert_dir)], env / "layers", device="cpu,cpu", dataset=None)
    assert len(calls) >= 2 and len(calls[-1]) == 3  # the embedding output and both layers, from one split pass
    single = run_analysis("layers", [str(tiny_bert_dir)], env / "layers1", device="cpu", use_cache=False, dataset=None)
    np.testing.assert_allclose(out.tables["layers"]["stsb_spearman"], single.tables["layers"]["stsb_spearman"], atol=1e-6)
