"""A stored record is reused when its data root is given again in another of the three accepted layouts (``data``,
``data/senteval``, ``data/senteval/downstream``): its data files were looked for as named under the new root
(``downstream/TREC/...`` in ``data/senteval/downstream``), said to be missing, and the task trained again."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import embench
from embench.data.root import DataRoot, file_sha256, manifest_path
from embench.evaluation.record_checks import data_problem
from embench.evaluation.results import Record

TREC = ("TREC/train_5500.label", "TREC/TREC_10.label")


def layouts(base):
    """The one data root in each accepted layout, and how a record made from it names a SentEval file."""
    return {base: "senteval/downstream/", base / "senteval": "downstream/", base / "senteval" / "downstream": ""}


def record_of(files: dict[str, str]) -> Record:
    return Record(task="TREC", display="TREC", kind="transfer", model="m", main_score=0.5, scores={}, protocol={},
                  encoder={}, provenance={"data_files": files})


def test_manifest_path_of_each_layout():
    assert manifest_path("senteval/downstream/TREC/TREC_10.label") == "senteval/downstream/TREC/TREC_10.label"
    assert manifest_path("downstream/TREC/TREC_10.label") == "senteval/downstream/TREC/TREC_10.label"
    assert manifest_path("TREC/TREC_10.label") == "senteval/downstream/TREC/TREC_10.label"
    assert manifest_path("raw/sick2014/SICK_test_annotated.txt.gz") == "raw/sick2014/SICK_test_annotated.txt.gz"


def test_a_records_files_are_found_in_the_same_root_given_in_any_layout(tmp_path):
    base = tmp_path / "data"
    for rel in TREC:
        (base / "senteval/downstream" / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / "senteval/downstream" / rel).write_text(f"NUM:date {rel} ?\n")
    sums = {rel: file_sha256(base / "senteval/downstream" / rel) for rel in TREC}
    for made_in, prefix in layouts(base).items():
        record = record_of({prefix + rel: sums[rel] for rel in TREC})
        for given in layouts(base):
            assert data_problem(record, given, file_sha256) is None, (made_in, given)  # a path or a DataRoot
    # still a changed file is caught, and a missing one named, in another layout
    record = record_of({"senteval/downstream/" + rel: sums[rel] for rel in TREC})
    (base / "senteval/downstream" / TREC[1]).write_text("HUM:ind Who ?\n")
    assert data_problem(record, DataRoot(base / "senteval"), file_sha256) == \
        "its data file senteval/downstream/TREC/TREC_10.label has changed since (sha256 differs)"
    (base / "senteval/downstream" / TREC[1]).unlink()
    assert data_problem(record, DataRoot(base / "senteval/downstream"), file_sha256) == \
        f"its data file senteval/downstream/TREC/TREC_10.label is not in the data root {base / 'senteval/downstream'}"


class Random:
    fingerprint = "random-8"

    def encode(self, texts, **kw):
        return np.random.default_rng(len(texts)).standard_normal((len(texts), 8)).astype(np.float32)


@pytest.mark.slow  # 40 pairs of SICK-R's test split scored, then found twice (random vectors: no model)
def test_a_stored_record_is_reused_under_the_root_given_in_another_layout(tmp_path, data_root):
    base = tmp_path / "data"
    (base / "senteval/downstream/SICK").mkdir(parents=True)
    lines = (data_root / "senteval/downstream/SICK/SICK_test_annotated.txt").read_text(encoding="utf-8").splitlines()
    (base / "senteval/downstream/SICK/SICK_test_annotated.txt").write_text("\n".join(lines[:41]) + "\n", encoding="utf-8")
    runs = {}
    for given in layouts(base):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            runs[given] = embench.evaluate(Random(), tasks=["SICKRelatedness"], data=given, results_dir=tmp_path / "results",
                                           progress=False, use_cache=False)
        assert not [w for w in caught if "not reused" in str(w.message)], given
    assert [ev.status["SICKRelatedness"] for ev in runs.values()] == ["computed", "stored", "stored"]
    assert len({ev.records[0].main_score for ev in runs.values()}) == 1


def test_a_gz_file_gzipped_otherwise_is_the_same_data_and_its_record_reused(tmp_path):
    """`data download --base-url` of a mirror wrote STS-B's .csv.gz with other gzip bytes (`data check`: ok, as the
    manifest hashes the content): the record made on the other root was computed again, "sha256 differs"."""
    import gzip
    import hashlib

    from embench.evaluation.provenance import data_checksums

    text = b"a\tb\t3.0\nc\td\t1.0\n"
    rel = "raw/sts/STSBenchmark/sts-test.csv.gz"
    roots = {}
    for name, level, stamp in (("one", 9, 0), ("two", 1, 12345)):
        path = tmp_path / name / rel
        path.parent.mkdir(parents=True)
        path.write_bytes(gzip.compress(text, compresslevel=level, mtime=stamp))
        roots[name] = DataRoot(tmp_path / name)
    one, two = (roots[n].path / rel for n in ("one", "two"))
    assert file_sha256(one) != file_sha256(two)  # other bytes, one content
    stored = data_checksums(roots["one"], [one])
    assert stored == {rel: hashlib.sha256(text).hexdigest()}
    assert data_problem(record_of(stored), roots["two"], file_sha256) is None
    assert data_problem(record_of({rel: file_sha256(one)}), roots["one"], file_sha256) is None  # an older record
    two.write_bytes(gzip.compress(text + b"e\tf\t2.0\n"))
    assert "has changed since (sha256 differs)" in data_problem(record_of(stored), roots["two"], file_sha256)
