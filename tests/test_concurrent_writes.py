"""Many processes writing one results folder and one embedding cache at once (a grid on a shared
filesystem): no record is lost or half-written, no vector is wrong, no temporary file stays behind."""

from __future__ import annotations

import json
import multiprocessing as mp

import numpy as np
import pytest

from embench.encoding.cache import EmbeddingCache, text_key
from embench.evaluation.items import Items
from embench.evaluation.results import Record, ResultStore, read_record, record_key

WRITERS, ROUNDS, TASKS = 4, 10, 6


def _vector(text: str) -> np.ndarray:
    """The one right vector of a text, whoever writes it."""
    rng = np.random.default_rng(int(text_key(text)[:8], 16))
    return rng.standard_normal(8).astype(np.float32)


def _hammer(args: tuple[str, str, int]) -> None:
    results, cache_root, writer = args
    store, cache = ResultStore(results), EmbeddingCache(cache_root, "enc")
    encoder = {"fingerprint": "f"}
    for r in range(ROUNDS):
        # every writer writes every task's record (the same key: the last rename wins, whole)
        task = f"T{(writer + r) % TASKS}"
        proto = {"seed": 1}
        items = Items(kind="sts", groups=["all"], values=[np.full(5, writer, dtype=np.float64)], gold=None, digest="d")
        store.save(Record(task=task, display=task, kind="sts", model="m", main_score=0.1 * writer, scores={"w": writer, "r": r},
                          protocol=proto, encoder=encoder, key=record_key(task, encoder, proto)), items)
        # overlapping texts: writers share half of theirs with the next one
        texts = [f"text {i}" for i in range(writer * 10 + r, writer * 10 + r + 20)]
        cache.put_many([text_key(t) for t in texts], np.stack([_vector(t) for t in texts]))
        # and read what the others wrote meanwhile: never a wrong vector
        fresh = EmbeddingCache(cache_root, "enc")
        for k, v in fresh.get_many([text_key(f"text {i}") for i in range(0, 80, 7)]).items():
            assert k and np.isfinite(v).all()


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_many_processes_write_one_results_folder_and_one_cache_without_loss(tmp_path):
    results, cache_root = tmp_path / "results", tmp_path / "cache"
    with mp.get_context("fork").Pool(WRITERS) as pool:  # separate processes (fork: no second import of torch)
        pool.map(_hammer, [(str(results), str(cache_root), w) for w in range(WRITERS)])
    files = sorted(results.glob("m/*.json"))
    assert len(files) == TASKS
    store = ResultStore(results)
    for f in files:
        rec = read_record(f)
        assert rec is not None, f  # whole and checked (key, schema)
        assert json.loads(f.read_text())["scores"]["w"] == round(rec.main_score * 10)  # one writer's, not a mix
        # two writers of one record each write its items file first: the checksum in the record pairs
        # them, so what is read back is the record's own items or nothing (then scored again), never another's
        items = store.load_items(rec)
        assert items is None or items.values[0][0] == json.loads(f.read_text())["scores"]["w"]
    leftovers = [p for p in tmp_path.rglob("*") if ".tmp" in p.name]
    assert leftovers == []
    cache = EmbeddingCache(cache_root, "enc")
    texts = [f"text {i}" for i in range(0, (WRITERS - 1) * 10 + ROUNDS + 19)]
    got = cache.get_many([text_key(t) for t in texts])
    assert len(got) == len(texts)
    for t in texts:
        assert np.array_equal(got[text_key(t)], _vector(t)), t


def test_a_record_is_never_paired_with_another_writers_items(tmp_path, monkeypatch):
    """The race the test above can hit: a second writer replaces the items file just after the first wrote it.
    The first record's checksum is of its own bytes, so its items read back as missing (scored again), never
    as the second writer's; and a file replaced between the check and the read cannot slip in either."""
    from embench.core import atomic
    from embench.evaluation import items as items_module

    store, encoder, proto = ResultStore(tmp_path), {"fingerprint": "f"}, {"seed": 1}
    other = Items(kind="sts", groups=["all"], values=[np.full(5, 2.0)], gold=None, digest="d")

    def write_then_replaced(path, data, **kw):
        atomic.write_bytes(path, data, **kw)
        monkeypatch.setattr(items_module, "write_bytes", atomic.write_bytes)
        other.save(path)  # the other writer, in between

    monkeypatch.setattr(items_module, "write_bytes", write_then_replaced)
    mine = Items(kind="sts", groups=["all"], values=[np.full(5, 1.0)], gold=None, digest="d")
    record = Record(task="T", display="T", kind="sts", model="m", main_score=0.1, scores={"w": 1}, protocol=proto,
                    encoder=encoder, key=record_key("T", encoder, proto))
    store.save(record, mine)
    assert store.load_items(read_record(store.path(record))) is None
