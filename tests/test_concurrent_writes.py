"""Many processes writing one results folder and one embedding cache at once (a grid on a shared
filesystem): no record is lost or half-written, no vector is wrong, no temporary file stays behind."""

from __future__ import annotations

import json
import multiprocessing as mp

import numpy as np

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
