"""Hostile files and names: paths stay inside their roots, stored records are checked before reuse."""

from __future__ import annotations

import json
import math
import warnings

import pytest

from embench.core.errors import EmbenchError
from embench.data.manifest import download
from embench.data.root import DataRoot
from embench.evaluation.results import Record, ResultStore, record_key


def _record(model="m", task="STS12", score=0.5, **kw) -> Record:
    enc = {"fingerprint": "f", "pooling": "cls"}
    proto = {"aggregation": "all"}
    return Record(task=task, display=task, kind="sts", model=model, main_score=score, scores={"all": {"spearman": score}},
                  protocol=proto, encoder=enc, key=record_key(task, enc, proto), **kw)


@pytest.mark.parametrize("model", [".", "..", "../..", "/", "~", "..\\..", "a/../../b", ""])
def test_a_model_named_like_a_path_writes_inside_the_results_folder_where_show_finds_it(tmp_path, model):
    store = ResultStore(tmp_path / "results")
    path = store.save(_record(model=model))
    assert path.resolve().is_relative_to((tmp_path / "results").resolve())
    assert path.parent.parent.resolve() == (tmp_path / "results").resolve()  # <root>/<model>/<file>: results show sees it
    assert [r.model for r in store.records()] == [model]


def test_a_task_name_cannot_lead_a_record_outside_its_folder(tmp_path):
    store = ResultStore(tmp_path / "results")
    with pytest.raises(EmbenchError, match="outside"):
        store.path("m", "../../evil", "k")


def test_a_manifest_entry_pointing_outside_the_data_root_is_refused(tmp_path):
    manifest = tmp_path / "manifest.json"
    for bad in ("../outside.txt", "/tmp/abs.txt", "senteval/../../x.txt"):
        manifest.write_text(json.dumps({"files": [{"path": bad, "url": "http://127.0.0.1:9/x", "sha256": "0" * 64}]}))
        with pytest.raises(EmbenchError, match="manifest entry .* points outside"):
            download(DataRoot(tmp_path / "root"), manifest=manifest)


def _store_with(tmp_path, text: str | bytes) -> tuple[ResultStore, Record]:
    store = ResultStore(tmp_path / "results")
    good = _record()
    p = store.save(good)
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return store, good


def _as_json(record: Record, **changes) -> str:
    d = record.to_dict()
    d.update(changes)
    return json.dumps(d)


@pytest.mark.parametrize("change", [
    {"task": "STS13"},  # content does not match its key's task
    {"model": "another"},
    {"key": "0123456789abcdef"},
    {"protocol": {"aggregation": "mean"}},  # the key no longer matches the content
    {"main_score": 7.5},
    {"main_score": float("nan")},
    {"main_score": "high"},
    {"scores": "none"},
])
def test_an_invalid_record_is_named_once_and_not_reused(tmp_path, change):
    good = _record()
    store, _ = _store_with(tmp_path, _as_json(good, **change))
    with pytest.warns(UserWarning, match=r"STS12-.*\.json") as caught:
        assert store.find("m", "STS12", good.key) is None
        assert store.find("m", "STS12", good.key) is None  # asked again: not named again
    assert len([w for w in caught if "STS12-" in str(w.message)]) == 1


@pytest.mark.parametrize("text", [b"\xff\xfe\x00garbage", b"", b"[1, 2]", b'{"task": ', b"null", b'{"task": "STS12"}'])
def test_an_undecodable_record_never_stops_a_run_or_results_show(tmp_path, text):
    store, good = _store_with(tmp_path, text)
    with pytest.warns(UserWarning, match="STS12-"):
        assert store.find("m", "STS12", good.key) is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert store.records() == []


def test_a_valid_record_is_reused(tmp_path):
    store = ResultStore(tmp_path / "results")
    good = _record()
    store.save(good)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = store.find("m", "STS12", good.key)
    assert found is not None and math.isclose(found.main_score, 0.5)


def test_a_record_is_reused_when_its_model_is_named_by_a_relative_path_from_another_folder(tmp_path, monkeypatch):
    """A record stored from a project folder as ``models/bert-a`` was thrown away (and computed again) when a run
    from a sub-folder named the same model ``../models/bert-a``: the stored name was read against the new folder."""
    (tmp_path / "models" / "bert-a").mkdir(parents=True)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    store = ResultStore(tmp_path / "results")
    good = _record(model="models/bert-a")
    assert store.save(good).parent.name == "bert-a"
    monkeypatch.chdir(tmp_path / "sub")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = store.find("../models/bert-a", "STS12", good.key)
    assert found is not None and found.model == "models/bert-a"
    store.save(_record(model="../models/bert-a"))  # stored from sub/: still read from the project folder
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert store.find("models/bert-a", "STS12", good.key) is not None
        monkeypatch.chdir(tmp_path / "sub")  # a grid's status from elsewhere reads the folder its plan fixed
        assert store.find("models/bert-a", "STS12", good.key, folder="bert-a") is not None
    monkeypatch.chdir(tmp_path)
    d = {**good.to_dict(), "model": "models/bert-b"}  # another model's record in this folder is still refused
    store.path(good).write_text(json.dumps(d))
    with pytest.warns(UserWarning, match="its model is 'models/bert-b', its folder says 'bert-a'"):
        assert store.find("models/bert-a", "STS12", good.key) is None
