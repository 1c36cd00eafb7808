"""Fuzzing the readers of hostile files (hypothesis): mutated STS and transfer lines, raw bytes and
JSON records end in a clear EmbenchError or a correct result, never another exception."""

from __future__ import annotations

import json
import math
import shutil
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from embench.core.errors import EmbenchError
from embench.data.root import DataRoot
from embench.evaluation.results import Record, ResultStore, record_key
from embench.tasks.senteval.datasets import TRANSFER_DATASETS
from embench.tasks.senteval.reading import read_task
from embench.tasks.sts.reader import STS_TASKS

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# pieces a damaged or hostile line is made of
PIECES = st.sampled_from(["\t", "\n", "\r\n", " ", "", "nan", "inf", "-1", "5.5", "3.2", "1e999", "\x00", "é", "\ufeff",
                          "[/bold]", "a sentence", "0", "1", "ENTAILMENT", "DESC:def", "\xff"])


def _lines(draw_lines, base: list[str]) -> list[str]:
    """``base`` with some lines replaced, cut, duplicated or joined."""
    out = list(base)
    for op, pos, piece in draw_lines:
        i = pos % max(len(out), 1)
        if not out:
            out.append(piece)
        elif op == 0:
            out[i] = piece
        elif op == 1:
            out[i] = out[i][: len(out[i]) // 2] + piece
        elif op == 2:
            out.insert(i, piece)
        else:
            del out[i]
    return out


EDITS = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 10_000), PIECES), min_size=1, max_size=4)


@pytest.fixture(scope="module")
def sts_copy(data_root, tmp_path_factory):
    dest = tmp_path_factory.mktemp("fuzz-sts")
    for rel in ("STS/STS13-en-test", "STS/STSBenchmark", "TREC", "MRPC"):
        shutil.copytree(data_root / "senteval" / "downstream" / rel, dest / "senteval" / "downstream" / rel)
    return dest


def _check_sts(root, task: str, part: str) -> None:
    """A clear error, or a correct result: one pair per non-blank gold line, each with a finite gold
    score on the 0-5 scale (nothing dropped, shifted or invented)."""
    t = STS_TASKS[task]
    try:
        group, files = t.read(DataRoot(root), part, "senteval")
    except EmbenchError:
        return
    # a leading byte-order mark is no text (the readers drop it, data/readers.read_text): a first line of a mark alone
    # is blank, as a fuzzed edit made it
    gold_lines = [x for x in files[-1].read_text(encoding="utf-8-sig").splitlines() if x.strip()]
    assert len(group.left) == len(group.right) == len(group.gold) == len(gold_lines) > 0
    assert np.isfinite(group.gold).all() and (group.gold >= 0).all() and (group.gold <= 5).all()


@FUZZ
@given(edits=EDITS, which=st.sampled_from(["STS.input.FNWN.txt", "STS.gs.FNWN.txt"]))
def test_fuzzed_sts_semeval_files_give_a_clear_error_or_good_pairs(sts_copy, edits, which):
    folder = sts_copy / "senteval" / "downstream" / "STS" / "STS13-en-test"
    path = folder / which
    original = path.read_bytes()
    try:
        path.write_text("\n".join(_lines(edits, original.decode().splitlines()[:20])) + "\n", encoding="utf-8",
                        errors="surrogateescape")
        _check_sts(sts_copy, "STS13", "FNWN")
    finally:
        path.write_bytes(original)


@FUZZ
@example(edits=[(0, 0, "\ufeff")])  # found by CI: a first line of a byte-order mark alone
@given(edits=EDITS)
def test_fuzzed_sts_b_lines_give_a_clear_error_or_good_pairs(sts_copy, edits):
    path = sts_copy / "senteval" / "downstream" / "STS" / "STSBenchmark" / "sts-test.csv"
    original = path.read_bytes()
    try:
        path.write_text("\n".join(_lines(edits, original.decode().splitlines()[:20])) + "\n", encoding="utf-8")
        _check_sts(sts_copy, "STSBenchmark", "test")
    finally:
        path.write_bytes(original)


@FUZZ
@given(raw=st.binary(max_size=300), which=st.sampled_from(["STS.input.FNWN.txt", "STS.gs.FNWN.txt"]))
def test_random_bytes_in_an_sts_file_give_a_clear_error_or_good_pairs(sts_copy, raw, which):
    path = sts_copy / "senteval" / "downstream" / "STS" / "STS13-en-test" / which
    original = path.read_bytes()
    try:
        path.write_bytes(raw)
        _check_sts(sts_copy, "STS13", "FNWN")
    finally:
        path.write_bytes(original)


@FUZZ
@given(edits=EDITS, task=st.sampled_from(["TREC", "MRPC"]), raw=st.none() | st.binary(max_size=200))
@pytest.mark.slow
def test_fuzzed_transfer_files_give_a_clear_error_or_labelled_samples(sts_copy, edits, task, raw):
    data = next(d for d in TRANSFER_DATASETS if d.name == task)
    name = data.splits["test"][0]
    path = sts_copy / "senteval" / "downstream" / data.folder / name
    original = path.read_bytes()
    try:
        if raw is not None:
            path.write_bytes(raw)
        else:
            lines = original.decode(data.encoding).splitlines()[:20]
            path.write_bytes(("\n".join(_lines(edits, lines)) + "\n").encode(data.encoding, errors="replace"))
        try:
            splits, _ = read_task(DataRoot(sts_copy), data)
        except EmbenchError:
            return
        for s in splits.values():
            assert len(s.a) == len(s.y) > 0 and set(s.y.tolist()) <= set(range(data.nclasses))
            assert s.b is None or len(s.b) == len(s.a)
    finally:
        path.write_bytes(original)


def _record() -> Record:
    enc, proto = {"fingerprint": "f", "pooling": "cls"}, {"aggregation": "all"}
    return Record(task="STS12", display="STS12", kind="sts", model="m", main_score=0.5, scores={"all": 0.5},
                  protocol=proto, encoder=enc, key=record_key("STS12", enc, proto))


JSONISH = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True, allow_infinity=True) | st.integers() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)


@FUZZ
@given(field=st.sampled_from(["task", "display", "kind", "model", "main_score", "scores", "protocol", "encoder",
                              "provenance", "key", None]),
       value=JSONISH, raw=st.none() | st.binary(max_size=120))
@pytest.mark.slow
def test_fuzzed_result_records_are_reused_only_when_valid(tmp_path_factory, field, value, raw):
    store = ResultStore(tmp_path_factory.mktemp("fuzz-results"))
    good = _record()
    path = store.save(good)
    if raw is not None:
        path.write_bytes(raw)
    else:
        d = good.to_dict()
        if field is None:
            d = value
        else:
            d[field] = value
        path.write_text(json.dumps(d))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = store.find("m", "STS12", good.key)
        listed = store.records()
    for r in [found] * (found is not None) + listed:
        assert r.task == "STS12" and r.key == good.key and math.isfinite(r.main_score) and -1 <= r.main_score <= 1
