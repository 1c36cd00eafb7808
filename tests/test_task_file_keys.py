"""A task file's records are keyed by its data: two task files of one name over other data (a copy with edited
scores in another folder) each keep their record, where both wrote ``my-sts-<key>.json`` and each run replaced the
other's; a record stored before the data was in the key is still found and reused while its files are unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import embench
from embench.tasks.task_file.tasks import FileTask

pytestmark = pytest.mark.usefixtures("task_registry_restored")  # conftest.py

YAML = "name: my-sts\nkind: pairs\nfiles: {test: pairs.tsv}\nscore_range: [0, 5]\n"


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir, one_thread):
    return embench.load_model(tiny_bert_dir, pooling="mean", device="cpu")


def write(folder: Path, first_score: str = "4.5") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [("a cat sat", "a cat sits", first_score), ("dogs run", "a dog runs", "3.0"), ("rain falls", "it rains", "2.0"),
            ("the sun", "a lamp", "1.0"), ("blue sky", "green grass", "0.5"), ("a red car", "a red auto", "4.0")]
    (folder / "pairs.tsv").write_text("sentence1\tsentence2\tscore\n" + "".join("\t".join(r) + "\n" for r in rows))
    (folder / "task.yaml").write_text(YAML)
    return folder / "task.yaml"


def run(model, tmp_path: Path, data_root: Path, task_file: Path):
    return embench.evaluate(model, data=data_root, results_dir=tmp_path / "results", cache_dir=tmp_path / "cache",
                            progress=False, task_files=[task_file])


@pytest.mark.slow  # eight evaluations of 12 texts
def test_task_files_of_one_name_over_other_data_keep_a_record_each(tmp_path, data_root, tiny):
    a, b = write(tmp_path / "a"), write(tmp_path / "b", first_score="0.0")  # b: a copy with one score edited
    first = {f: run(tiny, tmp_path, data_root, f) for f in (a, b)}
    assert [ev.status for ev in first.values()] == [{"my-sts": "computed"}] * 2
    assert first[a].records[0].main_score != first[b].records[0].main_score
    for f in (a, b):  # each finds its own: none replaced the other's
        again = run(tiny, tmp_path, data_root, f)
        assert again.status == {"my-sts": "stored"} and again.records[0].main_score == first[f].records[0].main_score
    stored = embench.results(tmp_path / "results")
    assert len(stored) == 2 and len({r.protocol["task_data"] for r in stored}) == 2


@pytest.mark.slow  # four evaluations of 12 texts
def test_a_record_stored_before_the_data_was_in_its_key_is_reused_while_its_files_are_unchanged(
        tmp_path, data_root, tiny, monkeypatch):
    task_file = write(tmp_path / "a")
    with monkeypatch.context() as before:  # the record as an earlier embench stored it: no task_data in its protocol
        before.delattr(FileTask, "recorded_protocol")
        old = run(tiny, tmp_path, data_root, task_file).records[0]
    assert "task_data" not in old.protocol
    again = run(tiny, tmp_path, data_root, task_file)
    assert again.status == {"my-sts": "stored"} and again.records[0].key == old.key
    (tmp_path / "a/pairs.tsv").write_text((tmp_path / "a/pairs.tsv").read_text().replace("4.5", "0.0"))
    edited = run(tiny, tmp_path, data_root, task_file)
    assert edited.status == {"my-sts": "computed"} and edited.records[0].key != old.key
    assert len(list((tmp_path / "results").rglob("my-sts-*.json"))) == 2
    (kept,) = (tmp_path / "results").rglob(f"my-sts-{old.key}.json")  # the old data's record, left as it was
    assert json.loads(kept.read_text())["main_score"] == old.main_score
