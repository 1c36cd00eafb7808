"""The audit's forward passes: the baseline and every pooling from one pass with the same scores as
each pooling evaluated alone; the batch-size knob (and emulated bf16) on a seeded sample, or every
text with --full-batch-check; low precision on a CPU without native arithmetic is flagged."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import embench
from embench.audit import passes
from embench.audit.protocol import audit
from embench.models import precision

TASKS = ["STS13"]


@pytest.mark.slow
def test_pooling_views_come_from_the_shared_pass_and_score_as_each_pooling_alone(tiny_bert_dir, data_root, tmp_path,
                                                                                  one_thread):
    steps: list[str] = []
    result = audit(str(tiny_bert_dir), knobs=["pooling", "text"], tasks=TASKS, data=data_root, results_dir=tmp_path / "r",
                   cache_dir=tmp_path / "c", device="cpu", on_step=steps.append)
    # one pass: the baseline (cls), mean, both first-last variants and cls_before_pooler over SentEval and raw
    # text; nothing else encoded
    assert [r["pass"] for r in result.passes.rows] == ["baseline + pooling views"]
    assert result.passes.rows[0]["views"] == 5
    assert any("shared pass" in s for s in steps) and steps[-1].startswith("1 forward pass")
    for pooling in ("mean", "first_last_avg", "embed_last_avg", "cls_before_pooler"):
        alone = embench.evaluate(str(tiny_bert_dir), tasks=TASKS, pooling=pooling, data=data_root, device="cpu",
                                 results_dir=tmp_path / f"alone-{pooling}", cache_dir=tmp_path / f"alone-{pooling}-cache")
        assert alone.encode_stats["encoded"] > 0  # computed independently, in a cache of its own
        assert result.rows.loc[f"pooling={pooling}", "STS13"] == pytest.approx(alone.records[0].main_score, abs=1e-6)
    raw = embench.evaluate(str(tiny_bert_dir), tasks=TASKS, text="raw", data=data_root, device="cpu",
                           results_dir=tmp_path / "raw", cache_dir=tmp_path / "raw-cache")
    assert result.rows.loc["text=raw", "STS13"] == pytest.approx(raw.records[0].main_score, abs=1e-6)


@pytest.mark.slow
def test_batch_size_knob_runs_on_a_seeded_sample_unless_asked_for_every_text(tiny_bert_dir, data_root, tmp_path, one_thread):
    common = {"knobs": ["batch_size"], "tasks": TASKS, "data": data_root, "results_dir": tmp_path / "r",
              "cache_dir": tmp_path / "c", "device": "cpu"}
    sampled = audit(str(tiny_bert_dir), sample=200, **common)
    rows = {r["pass"]: r for r in sampled.passes.rows}
    assert {f"batch_size={b} (sample)" for b in (1, 64, 512)} <= set(rows)
    assert all(rows[f"batch_size={b} (sample)"]["texts"] == 200 for b in (1, 64, 512))
    assert "200 texts (seed 42) re-encoded" in sampled.sample_note
    assert max(sampled.sample_diffs.values()) < 1e-5  # batch composition moves a vector by float noise only
    full = audit(str(tiny_bert_dir), full_batch_check=True, **common)
    assert {f"batch_size={b}" for b in (1, 64, 512)} <= {r["pass"] for r in full.passes.rows}
    assert full.sample_note is None
    np.testing.assert_allclose(sampled.rows.to_numpy(), full.rows.to_numpy(), atol=1e-4)



@pytest.mark.slow
def test_a_shorter_maximum_length_re_encodes_only_the_texts_it_truncates(tiny_bert_dir, data_root, tmp_path, one_thread):
    common = {"knobs": ["max_length"], "tasks": TASKS, "data": data_root, "results_dir": tmp_path / "r",
              "cache_dir": tmp_path / "c", "device": "cpu"}
    short = audit(str(tiny_bert_dir), **common)
    rows = {r["pass"]: r for r in short.passes.rows}
    base = embench.load_model(str(tiny_bert_dir), device="cpu")
    texts = passes.suite_texts(TASKS, [{}], embench.data.DataRoot.resolve(data_root))
    longer = int((base.token_lengths(texts) > 32).sum())
    assert 0 < longer < len(texts)
    assert rows["max_length=32 (truncated texts)"]["texts"] == longer  # the truncated texts only
    full = audit(str(tiny_bert_dir), full_length_check=True, **common)
    assert {r["pass"]: r for r in full.passes.rows}["max_length=32"]["texts"] == len(texts)
    # the texts it does not truncate have the same ids, so the same vectors: the row equals the full pass's
    np.testing.assert_allclose(short.rows.to_numpy(), full.rows.to_numpy(), atol=1e-6)
    assert short.rows.loc["max_length=32", "STS13"] != short.rows.loc["baseline", "STS13"]

def test_the_sample_is_seeded_distinct_and_capped():
    texts = [f"t{i}" for i in range(50)] * 2
    a, b = passes.sample_texts(texts, 10, 3), passes.sample_texts(list(reversed(texts)), 10, 3)
    assert a == b and len(set(a)) == 10 and set(a) <= set(texts)
    assert passes.sample_texts(texts, 10, 4) != a
    assert passes.sample_texts(texts, 500, 3) == sorted(set(texts))


def test_emulated_low_precision_is_detected_from_the_cpu_flags(monkeypatch):
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    assert not precision.native_precision("cpu", "bf16") and not precision.native_precision("cpu", "fp16")
    assert precision.native_precision("cpu", "fp32") and precision.native_precision("cuda:0", "bf16")
    with pytest.warns(UserWarning, match=r"--dtype bf16 on this CPU has no native bf16 arithmetic .*5-6x slower.*"
                                         r"Use --dtype fp32"):
        assert precision.warn_if_emulated("cpu", "bf16")
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx2", "avx512_bf16"}))
    assert precision.native_precision("cpu", "bf16") and not precision.native_precision("cpu", "fp16")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not precision.warn_if_emulated("cpu", "bf16")


def test_training_in_emulated_fp16_or_bf16_warns_naming_the_precision(monkeypatch):
    from embench.train.mixed_precision import resolve_precision

    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx2", "avx512_bf16"}))  # bf16 native, fp16 not
    with pytest.warns(UserWarning, match=r"--precision fp16-mixed on this CPU has no native fp16 .*Use --precision fp32"):
        assert resolve_precision("fp16-mixed", "cpu") == "fp16-mixed"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_precision("bf16-mixed", "cpu") == "bf16-mixed"
        assert resolve_precision("fp16-mixed", "cuda:0") == "fp16-mixed"  # a GPU computes it natively
        assert resolve_precision("fp32", "cpu") == "fp32"
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx2"}))
    with pytest.warns(UserWarning, match=r"--precision bf16 on this CPU has no native bf16"):
        resolve_precision("bf16", "cpu")


def test_loading_a_model_in_emulated_bf16_warns(tiny_bert_dir, monkeypatch):
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx2"}))
    with pytest.warns(UserWarning, match="no native bf16"):
        embench.load_model(tiny_bert_dir, device="cpu", dtype="bf16")


@pytest.mark.slow
def test_emulated_bf16_knob_runs_on_the_sample_and_native_bf16_on_every_text(tiny_bert_dir, data_root, tmp_path,
                                                                              monkeypatch, one_thread):
    import embench.audit.protocol as protocol

    common = {"knobs": ["dtype"], "tasks": TASKS, "data": data_root, "results_dir": tmp_path / "r",
              "cache_dir": tmp_path / "c", "device": "cpu", "sample": 100}
    monkeypatch.setattr(protocol, "native_precision", lambda device, dtype: False)
    emulated = audit(str(tiny_bert_dir), **common)
    assert [r["pass"] for r in emulated.passes.rows][-1] == "dtype=bf16 (sample)"
    assert 0 < emulated.sample_diffs["dtype=bf16"] < 0.1  # bf16 rounds: the vectors move, a little
    monkeypatch.setattr(protocol, "native_precision", lambda device, dtype: True)
    native = audit(str(tiny_bert_dir), **common)
    assert [r["pass"] for r in native.passes.rows][-1] == "dtype=bf16"
    assert native.sample_note is None
