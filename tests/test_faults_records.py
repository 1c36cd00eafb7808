"""A stored record is reused only when it agrees with itself and with the data it was computed from (issue 35)."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest

from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.record_checks import data_problem, score_problem
from embench.evaluation.results import Record, ResultStore, record_key

STS12_SCORES = {"subsets": {"a": {"n": 3, "pearson": 0.5, "spearman": 0.4}, "b": {"n": 1, "pearson": 0.9, "spearman": 0.8}},
                "all": {"pearson": 0.6, "spearman": 0.55}, "mean": {"pearson": 0.7, "spearman": 0.6},
                "wmean": {"pearson": 0.6, "spearman": 0.5}}  # by hand: mean (0.5+0.9)/2, wmean (3*0.5+0.9)/4


def _raw(main: float, kind: str = "sts", scores: dict | None = None, **protocol) -> dict:
    proto = {**EvalProtocol().to_dict(), **protocol}
    enc = {"fingerprint": "f", "pooling": "mean", "layer": None, "max_length": 128, "dtype": "fp32"}
    return {"task": "STS12", "display": "STS12", "kind": kind, "model": "m", "main_score": main,
            "scores": STS12_SCORES if scores is None else scores, "protocol": proto, "encoder": enc,
            "provenance": {}, "key": record_key("STS12", enc, proto)}


def test_a_consistent_record_passes_and_each_contradiction_is_named():
    assert score_problem(_raw(0.55)) is None  # all/spearman
    assert score_problem(_raw(0.7, aggregation="mean", correlation="pearson")) is None
    assert "main score 0.999 is not its own all/spearman score 0.55" in score_problem(_raw(0.999))
    bad_mean = json.loads(json.dumps(STS12_SCORES))
    bad_mean["mean"]["pearson"] = 0.75
    assert "mean/pearson score 0.75 is not the mean of its subsets (0.7)" in score_problem(_raw(0.55, scores=bad_mean))
    assert score_problem(_raw(0.8, kind="transfer", scores={"test_acc": 0.8})) is None
    assert "test accuracy 0.8" in score_problem(_raw(0.9, kind="transfer", scores={"test_acc": 0.8}))
    assert "ndcg_at_10 0.5" in score_problem(_raw(0.6, kind="mteb", scores={"main_score_name": "ndcg_at_10", "ndcg_at_10": 0.5}))


def test_a_tampered_record_file_is_not_served(tmp_path):
    raw = _raw(0.55)
    store = ResultStore(tmp_path)
    path = store.save(Record.from_dict(raw))
    assert store.find("m", "STS12", raw["key"]).main_score == 0.55
    path.write_text(json.dumps({**json.loads(path.read_text()), "main_score": 0.999}))
    with pytest.warns(UserWarning, match="main score 0.999 is not its own all/spearman score 0.55; it is computed again"):
        assert store.find("m", "STS12", raw["key"]) is None


def test_a_listing_says_a_damaged_record_is_left_out_not_computed(tmp_path):
    from embench.evaluation import results as results_module

    store = ResultStore(tmp_path)
    path = store.save(Record.from_dict(_raw(0.55)))
    path.write_text("{ not json")
    results_module._NAMED.discard(str(path))
    with pytest.warns(UserWarning, match=r"cannot read it \(JSONDecodeError\); it is left out \(a run of its task computes it again\)"):
        assert store.records() == []


def test_data_problem_names_a_changed_or_missing_file(tmp_path):
    from embench.data.root import file_sha256

    (tmp_path / "a.txt").write_text("x\n")
    record = Record.from_dict({**_raw(0.55), "provenance": {"data_files": {"a.txt": file_sha256(tmp_path / "a.txt")}}})
    assert data_problem(record, tmp_path, file_sha256) is None
    (tmp_path / "a.txt").write_text("y\n")
    assert data_problem(record, tmp_path, file_sha256) == "its data file a.txt has changed since (sha256 differs)"
    (tmp_path / "a.txt").unlink()
    assert "its data file a.txt is not in the data root" in data_problem(record, tmp_path, file_sha256)


def test_a_data_file_rewritten_with_its_old_size_and_mtime_is_hashed_again(tmp_path):
    """file_sha256 was memoised on (path, size, mtime): a same-size rewrite with the modification time set back
    (os.utime) kept its old checksum, so a record made on the old data passed the data check."""
    import os
    import time

    from embench.data.root import file_sha256

    data = tmp_path / "a.txt"
    data.write_text("x\n")
    before, st = file_sha256(data), data.stat()
    time.sleep(0.02)  # past the file system's timestamp granularity (a jiffy)
    data.write_text("y\n")
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert file_sha256(data) != before


@pytest.mark.slow
def test_every_setting_in_the_cache_key_is_in_a_record_s_identity_or_declared_to_follow_from_one(tiny_bert_dir):
    """The cache key hashes every encoder setting, the record key a fixed list: settings outside it (a forced family's
    left padding, include_prompt=False's excluded tokens, a view's final norm) were served one another's records.
    Every key any module writes into an encoder's settings, and every setting of a loaded encoder, is now part of
    the record's identity or declared in NOT_IDENTITY with the identity field it follows from."""
    import re
    from pathlib import Path

    import embench
    from embench.core.identity_fields import ENCODER_FIELDS, NOT_IDENTITY, OPTIONAL_FIELDS

    identity = {*ENCODER_FIELDS, *OPTIONAL_FIELDS}
    written = {key for path in Path(embench.__file__).parent.rglob("*.py")
               for key in re.findall(r"settings\.extra\[[\"'](\w+)[\"']\]\s*=", path.read_text(encoding="utf-8"))}
    assert {"prompt_tokens_excluded", "padding_side", "final_norm", "precision"} <= written  # the scan finds them
    assert written - identity - set(NOT_IDENTITY) == set()
    plain = embench.load_model(tiny_bert_dir, pooling="mean")
    forced = embench.load_model(tiny_bert_dir, pooling="mean", family="causal-lm")  # left padding: other positions
    view = forced.view(1, final_norm=True)
    for enc in (plain, forced, view):
        assert set(enc.settings.to_dict()) - identity - set(NOT_IDENTITY) == set()
    assert forced.settings.extra["family"] == "causal-lm" and "family" not in plain.settings.extra
    keys = [(e.cache_key(), record_key("STS12", e.describe(), {})) for e in (plain, forced)]
    assert keys[0][0] != keys[1][0] and keys[0][1] != keys[1][1]
    # the checkpoint's own family asked for by name changes nothing: the same vectors, cache entry and records
    assert embench.load_model(tiny_bert_dir, pooling="mean", family="encoder").cache_key() == plain.cache_key()


@pytest.mark.slow
def test_a_record_made_on_damaged_data_is_computed_again_on_the_repaired_root(tmp_path, data_root, tiny_bert_dir, monkeypatch):
    import embench

    monkeypatch.setenv("EMBENCH_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("EMBENCH_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "data"
    sts12 = root / "senteval/downstream/STS/STS12-en-test"
    shutil.copytree(data_root / "senteval/downstream/STS/STS12-en-test", sts12)
    clean = embench.evaluate(str(tiny_bert_dir), tasks=["STS12"], data=root, progress=False)
    assert clean.status == {"STS12": "computed"}
    assert embench.evaluate(str(tiny_bert_dir), tasks=["STS12"], data=root, progress=False).status == {"STS12": "stored"}
    target = sts12 / "STS.gs.MSRpar.txt"
    original = target.read_bytes()
    lines = original.decode().splitlines()
    target.write_text("\n".join(reversed(lines)) + "\n")  # the gold scores in the wrong order: a damaged root
    with pytest.warns(UserWarning, match=r"stored record of STS12 .* is not reused: its data file .* has changed"):
        damaged = embench.evaluate(str(tiny_bert_dir), tasks=["STS12"], data=root, progress=False)
    assert damaged.status == {"STS12": "computed"} and damaged.records[0].main_score != clean.records[0].main_score
    target.write_bytes(original)  # repaired
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        repaired = embench.evaluate(str(tiny_bert_dir), tasks=["STS12"], data=root, progress=False)
    assert repaired.status == {"STS12": "computed"} and repaired.records[0].main_score == clean.records[0].main_score


@pytest.mark.slow
def test_a_read_only_results_folder_still_serves_what_it_stores(tmp_path, data_root, tiny_bert_dir, monkeypatch):
    import embench
    from embench.core.errors import EmbenchError
    from embench.evaluation import results

    monkeypatch.setenv("EMBENCH_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("EMBENCH_CACHE", str(tmp_path / "cache"))
    first = embench.evaluate(str(tiny_bert_dir), tasks=["STS12"], data=data_root, progress=False)
    monkeypatch.setattr(results, "unwritable", lambda folder: PermissionError(13, "Permission denied"))
    again = embench.evaluate(str(tiny_bert_dir), tasks=["STS12"], data=data_root, progress=False)
    assert again.status == {"STS12": "stored"} and again.records[0].main_score == first.records[0].main_score
    with pytest.raises(EmbenchError, match="cannot write result records"):
        embench.evaluate(str(tiny_bert_dir), tasks=["STS12", "STS13"], data=data_root, progress=False)
