"""A task file's record is keyed on the protocol axes its kind is scored under, as a built-in task's is: an option
its scoring never reads (``--text raw`` or ``--correlation pearson`` for a classification file, ``--seed`` or
``--classifier`` for pairs) reuses the stored record, where each trained again and stored a duplicate of one score.
A record stored before, under the defaults of the axes now left out, keeps its key."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

import embench
from embench.evaluation.protocols import EvalProtocol
from embench.tasks.recorded_protocol import keyed
from embench.tasks.task_file import load_task_file
from embench.tasks.task_file.tasks import FileTask

pytestmark = pytest.mark.usefixtures("task_registry_restored")  # conftest.py

WORDS = "good bad film plot actor scene music story slow quick dull fine".split()


class Random:
    """Vectors from the texts' hashes: no model, the same vector for the same text."""

    fingerprint = "hashed-8"

    def encode(self, texts, **kw):
        return np.stack([np.random.default_rng(zlib.crc32(t.encode())).standard_normal(8) for t in texts]).astype(np.float32)


def classification(folder: Path, kind: str = "classification") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    rows = ["\t".join([*(" ".join(rng.choice(WORDS, 4)) for _ in range(1 + (kind != "classification"))),
                       "pos" if i % 2 else "neg"]) for i in range(120)]
    head = "text\tlabel" if kind == "classification" else "sentence1\tsentence2\tlabel"
    (folder / "rows.tsv").write_text(head + "\n" + "\n".join(rows) + "\n")
    (folder / "task.yaml").write_text(f"name: my-{kind}\nkind: {kind}\nfiles: rows.tsv\n")
    return folder / "task.yaml"


def pairs(folder: Path, subsets: int = 1, train: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    rows = [f"{' '.join(rng.choice(WORDS, 3))}\t{' '.join(rng.choice(WORDS, 3))}\t{i % 6}\tg{i % subsets}" for i in range(60)]
    (folder / "pairs.tsv").write_text("sentence1\tsentence2\tscore\tsubset\n" + "\n".join(rows) + "\n")
    files = "{test: pairs.tsv, train: pairs.tsv, dev: pairs.tsv}" if train else "{test: pairs.tsv}"
    (folder / "task.yaml").write_text(f"name: my-pairs\nkind: pairs\nfiles: {files}\nscore_range: [0, 5]\n")
    return folder / "task.yaml"


def kept(task_file: Path, **options) -> dict:
    """The protocol the record of ``task_file`` names under ``options``, task_data aside."""
    recorded = load_task_file(task_file).recorded_protocol(EvalProtocol(**options)).to_dict()
    return {k: v for k, v in recorded.items() if k != "task_data"}


DEFAULT = EvalProtocol().to_dict()
IGNORED = {  # kind -> options its score never reads; and the ones it does
    "classification": ({"correlation": "pearson", "text": "raw", "similarity": "dot", "aggregation": "mean",
                        "scoring": "regressor", "sick_split": "full", "stsb_split": "dev", "pair_features": "uv"},
                       {"classifier": "prototyping", "seed": 5}),
    "pair-classification": ({"correlation": "pearson", "text": "raw", "similarity": "dot"},
                            {"classifier": "prototyping", "seed": 5, "pair_features": "uv"}),
}


@pytest.mark.parametrize("kind", list(IGNORED))
def test_a_classification_kind_keys_its_classifier_seed_and_pair_features_alone(tmp_path, kind):
    task_file = classification(tmp_path, kind)
    ignored, read = IGNORED[kind]
    for axis, value in ignored.items():
        assert kept(task_file, **{axis: value}) == DEFAULT, axis
    for axis, value in read.items():
        assert kept(task_file, **{axis: value}) == {**DEFAULT, axis: value}, axis


def test_a_pairs_kind_keys_what_its_similarity_or_regressor_reads(tmp_path):
    one = pairs(tmp_path / "one")  # one subset: all, mean and wmean are one number
    for axis, value in {"classifier": "prototyping", "pair_features": "uv", "seed": 5, "sick_split": "full",
                        "stsb_split": "dev", "aggregation": "mean", "scoring": "regressor"}.items():
        assert kept(one, **{axis: value}) == DEFAULT, axis  # no train split: scored by similarity, as STS12-16
    for axis, value in {"correlation": "pearson", "text": "raw", "similarity": "dot"}.items():
        assert kept(one, **{axis: value}) == {**DEFAULT, axis: value}, axis
    assert kept(pairs(tmp_path / "three", subsets=3), aggregation="wmean") == {**DEFAULT, "aggregation": "wmean"}
    trained = pairs(tmp_path / "trained", subsets=3, train=True)
    regressor = {**DEFAULT, "scoring": "regressor"}
    assert kept(trained, scoring="regressor", seed=5) == {**regressor, "seed": 5}  # the regressor trains with it
    assert kept(trained, scoring="regressor", aggregation="mean") == regressor  # one test set
    assert kept(trained, scoring="regressor", similarity="dot") == {**regressor, "similarity": "dot"}  # as STS-B's
    assert kept(trained, seed=5) == DEFAULT and kept(trained, aggregation="mean") == {**DEFAULT, "aggregation": "mean"}


def run(tmp_path: Path, task_file: Path, **options):
    return embench.evaluate(Random(), data=tmp_path, task_files=[task_file], results_dir=tmp_path / "results",
                            progress=False, use_cache=False, **options)


def old_recorded_protocol(self, protocol):  # the previous version's key: every axis asked, with the files' digest
    from embench.data.root import file_sha256
    from embench.evaluation.task_data import data_digest

    return keyed(protocol, task_data=data_digest(file_sha256(p) for p in self.files()))


@pytest.mark.slow  # SentEval's nested k-fold on 120 rows, three times
def test_an_ignored_option_reuses_the_classification_record_and_one_read_trains_again(tmp_path):
    task_file = classification(tmp_path / "mine")
    first = run(tmp_path, task_file, classifier="prototyping")
    assert first.status == {"my-classification": "computed"}
    for option in ({"correlation": "pearson"}, {"text": "raw"}, {"similarity": "dot", "aggregation": "mean"}):
        again = run(tmp_path, task_file, classifier="prototyping", **option)
        assert again.status == {"my-classification": "stored"}, option
        assert again.records[0].key == first.records[0].key and again.records[0].main_score == first.records[0].main_score
    seeded = run(tmp_path, task_file, classifier="prototyping", seed=5)
    assert seeded.status == {"my-classification": "computed"} and seeded.records[0].protocol["seed"] == 5
    assert len(list((tmp_path / "results").rglob("my-classification-*.json"))) == 2


def test_an_ignored_option_reuses_the_pairs_record_and_the_correlation_makes_another(tmp_path):
    task_file = pairs(tmp_path / "mine")
    first = run(tmp_path, task_file)
    assert first.status == {"my-pairs": "computed"}
    for option in ({"classifier": "prototyping"}, {"pair_features": "uv"}, {"seed": 5}):
        assert run(tmp_path, task_file, **option).status == {"my-pairs": "stored"}, option
    pearson = run(tmp_path, task_file, correlation="pearson")
    assert pearson.status == {"my-pairs": "computed"} and pearson.records[0].main_score != first.records[0].main_score
    assert len(list((tmp_path / "results").rglob("my-pairs-*.json"))) == 2


def test_records_the_previous_version_stored_are_found_under_the_defaults_and_never_stop_a_run(tmp_path, monkeypatch):
    task_file = pairs(tmp_path / "mine")
    with monkeypatch.context() as before:
        before.setattr(FileTask, "recorded_protocol", old_recorded_protocol)
        old = run(tmp_path, task_file).records[0]
        old_seeded = run(tmp_path, task_file, seed=5).records[0]  # keyed on a seed its score never read
    assert old_seeded.key != old.key
    again = run(tmp_path, task_file)
    assert again.status == {"my-pairs": "stored"} and again.records[0].key == old.key  # the ignored axes at their defaults
    seeded = run(tmp_path, task_file, seed=5)  # its record is the default's: found, not trained again
    assert seeded.status == {"my-pairs": "stored"} and seeded.records[0].key == old.key
    assert {p.name for p in (tmp_path / "results").rglob("my-pairs-*.json")} == {
        f"my-pairs-{old.key}.json", f"my-pairs-{old_seeded.key}.json"}  # the older one left as it was
