"""all-MiniLM-L6-v2 on sts-all: the published numbers, the cache, and resume, on the real data."""

from __future__ import annotations

import numpy as np
import pytest

import embench
from embench.encoding.engine import Engine


@pytest.fixture(scope="module")
def minilm_run(data_root, tmp_path_factory, minilm_cache):
    base = tmp_path_factory.mktemp("minilm")
    (base / "cache").symlink_to(minilm_cache, target_is_directory=True)
    ev = embench.evaluate(
        "all-MiniLM-L6-v2", "sts-all", data=data_root, results_dir=base / "results", cache_dir=base / "cache", device="cpu"
    )
    return ev, base


@pytest.mark.slow
def test_minilm_sts_all_matches_published_scores(minilm_run, reference_sts_all):
    ev, _ = minilm_run
    got = {r.task: round(100 * r.main_score, 2) for r in ev.records}
    for task, ref in reference_sts_all.items():
        assert abs(got[task] - ref) <= 0.01, (task, got[task], ref)
    assert list(ev.frame.columns) == ["STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R", "Avg."]
    assert ev.frame["Avg."].iloc[0] == pytest.approx(np.mean([r.main_score for r in ev.records]))


@pytest.mark.slow
def test_texts_are_encoded_once_across_tasks(minilm_run):
    ev, _ = minilm_run
    stats = ev.encode_stats
    # The cache is shared with other MiniLM tests, so a text may come from it instead of the model;
    # either way each distinct text is produced exactly once.
    assert stats["encoded"] + stats["from_cache"] == stats["unique"] < stats["requested"]


@pytest.mark.slow
def test_second_run_encodes_nothing_and_reuses_records(minilm_run, data_root):
    ev, base = minilm_run
    again = embench.evaluate("all-MiniLM-L6-v2", "sts-all", data=data_root, results_dir=base / "results", cache_dir=base / "cache")
    assert set(again.status.values()) == {"stored"}
    # A new protocol cannot reuse the records of the tasks it changes (the SemEval years' aggregation), but every
    # vector comes from the disk cache; STS-B and SICK-R have no subsets to aggregate: their records are reused.
    other = embench.evaluate(
        "all-MiniLM-L6-v2", "sts-all", data=data_root, results_dir=base / "results", cache_dir=base / "cache",
        aggregation="wmean",
    )
    assert {t for t, s in other.status.items() if s == "stored"} == {"STSBenchmark", "SICKRelatedness"}
    assert {t for t, s in other.status.items() if s == "computed"} == {"STS12", "STS13", "STS14", "STS15", "STS16"}
    assert other.encode_stats["encoded"] == 0 and other.encode_stats["from_cache"] > 0
    # Different protocols never overwrite each other: both sets of records are on disk.
    stored = embench.results(base / "results", model="MiniLM")
    assert len(stored) == 12  # seven under "all", the five SemEval years again under "wmean"
    assert {r.protocol["aggregation"] for r in stored} == {"all", "wmean"}


@pytest.mark.slow
def test_record_carries_provenance(minilm_run):
    ev, _ = minilm_run
    r = next(r for r in ev.records if r.task == "STS12")
    p = r.provenance
    assert p["embench"] == embench.__version__
    assert len(p["model_fingerprint"]) == 16
    assert set(p["data_files"]) == {
        f"senteval/downstream/STS/STS12-en-test/STS.{kind}.{s}.txt"
        for kind in ("input", "gs")
        for s in ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews")
    }
    assert all(len(v) == 64 for v in p["data_files"].values())
    assert p["batch_size"] == 128 and p["dtype"] == "fp32" and p["device"] == "cpu" and p["wall_seconds"] > 0
    assert r.protocol == embench.EvalProtocol().to_dict()
    assert r.encoder["pooling"] == "mean" and r.encoder["normalize"] is True and r.encoder["max_length"] == 256
    assert r.scores["n"] == 3108


@pytest.mark.slow
def test_vectors_equal_sentence_transformers(minilm_path, data_root):
    from sentence_transformers import SentenceTransformer

    from embench.tasks import TASKS

    prepared = TASKS.get("STSBenchmark").prepare(embench.data.DataRoot(data_root), embench.EvalProtocol())
    texts = sorted(set(prepared.texts))[:400] + ["", "a " * 400]  # an empty and an over-long text too
    st = SentenceTransformer(str(minilm_path), device="cpu")
    ref = st.encode(texts, batch_size=32, convert_to_numpy=True)
    with pytest.warns(UserWarning, match="empty text"):
        ours = Engine(embench.load_model("all-MiniLM-L6-v2", device="cpu"), batch_size=64).embed(texts)
    assert ours.shape == ref.shape
    assert np.abs(ours - ref).max() < 1e-5
