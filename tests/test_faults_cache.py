"""The embedding cache under faults: concurrent writers, damaged shards, a folder it cannot write."""

from __future__ import annotations

import errno
import gc
import hashlib
import multiprocessing as mp
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from embench.encoding.cache import EmbeddingCache, text_key

DIM = 8


def _vector(key: str) -> np.ndarray:
    """The one right vector of a key, derived from it, so any stored row can be checked against its key."""
    seed = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")
    return np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)


def _writer(root: str, worker: int, rounds: int) -> None:
    cache = EmbeddingCache(Path(root), "ns")
    for r in range(rounds):
        shared = [text_key(f"shared {i}") for i in range(r * 7, r * 7 + 40)]  # every worker writes these
        own = [text_key(f"worker {worker} text {r} {i}") for i in range(25)]
        keys = shared + own
        cache.put_many(keys, np.stack([_vector(k) for k in keys]))


@pytest.mark.slow  # over 1 s: the fast tier stays under a minute
def test_many_processes_writing_one_cache_never_store_a_wrong_or_unreadable_vector(tmp_path):
    workers, rounds = 6, 30
    ctx = mp.get_context("fork")  # the workers need only numpy and the cache module
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, rounds)) for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert all(p.exitcode == 0 for p in procs)
    expected = {text_key(f"shared {i}") for r in range(rounds) for i in range(r * 7, r * 7 + 40)}
    expected |= {text_key(f"worker {w} text {r} {i}") for w in range(workers) for r in range(rounds) for i in range(25)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a damaged shard would warn: there must be none
        cache = EmbeddingCache(tmp_path, "ns")
        got = cache.get_many(sorted(expected))
    assert set(got) == expected  # zero unreadable
    wrong = [k for k, v in got.items() if not np.array_equal(v, _vector(k))]
    assert wrong == []  # zero wrong


def _filled(tmp_path, n_shards: int = 2) -> tuple[EmbeddingCache, list[list[str]]]:
    cache = EmbeddingCache(tmp_path, "ns")
    batches = []
    for s in range(n_shards):
        keys = [text_key(f"shard {s} text {i}") for i in range(10)]
        cache.put_many(keys, np.stack([_vector(k) for k in keys]))
        batches.append(keys)
    return cache, batches


def _shards(tmp_path) -> list[Path]:
    return sorted(p for p in (tmp_path / "ns").iterdir() if p.is_file() and not p.name.startswith("."))


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "garbage"])
def test_a_damaged_shard_is_reported_set_aside_and_its_keys_re_encoded(tmp_path, damage):
    _, (first, second) = _filled(tmp_path)
    data_files = [p for p in _shards(tmp_path) if p.suffix != ".keys"]
    victim = data_files[0]
    raw = victim.read_bytes()
    if damage == "truncate":
        victim.write_bytes(raw[: len(raw) // 2])
    elif damage == "flip":
        victim.write_bytes(raw[:-5] + bytes([raw[-5] ^ 0xFF]) + raw[-4:])
    elif damage == "empty":
        victim.write_bytes(b"")
    else:
        victim.write_bytes(os.urandom(len(raw)))
    with pytest.warns(UserWarning, match=f"damaged shard .*; set aside as {victim.name}.damaged;") as caught:
        got = EmbeddingCache(tmp_path, "ns").get_many(first + second)
        gc.collect()
    # np.load left the file of a zip it could not read open: "unclosed file <_io.BufferedReader ...>" for each
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert all(np.array_equal(v, _vector(k)) for k, v in got.items())  # never a wrong vector
    assert len(got) == 10  # the other shard is still served; the damaged one's keys are missing (re-encoded)
    assert not victim.exists()  # set aside, so the next run does not warn again
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(EmbeddingCache(tmp_path, "ns").get_many(first + second)) == 10


def test_a_damaged_shard_in_a_read_only_cache_is_skipped_and_the_warning_says_it_stays(tmp_path, monkeypatch):
    """The warning said "set aside as *.damaged" where the rename had failed: the shard stayed, and every run warned."""
    _, (first, second) = _filled(tmp_path)
    victim = _shards(tmp_path)[0]
    victim.write_bytes(victim.read_bytes()[:1000])

    def read_only(src, dst):  # root renames in a read-only folder (CI runs as root): the refusal is injected
        raise PermissionError(errno.EACCES, "Permission denied", str(src))

    monkeypatch.setattr(os, "replace", read_only)
    with pytest.warns(UserWarning) as caught:
        got = EmbeddingCache(tmp_path, "ns").get_many(first + second)
        gc.collect()
    assert [str(w.message) for w in caught] == [
        f"embedding cache: damaged shard {victim} (BadZipFile: File is not a zip file); it could not be set aside (the "
        "cache is read-only: Permission denied), so it is skipped this run; its texts are encoded again"]
    assert victim.exists() and len(got) == 10 and all(np.array_equal(v, _vector(k)) for k, v in got.items())


def test_a_cache_folder_that_cannot_be_written_degrades_to_no_cache_with_a_warning(tmp_path):
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder should be")
    cache = EmbeddingCache(blocker, "ns")
    keys = [text_key("a"), text_key("b")]
    with pytest.warns(UserWarning, match="cache"):
        cache.put_many(keys, np.stack([_vector(k) for k in keys]))
    assert cache.get_many(keys) == {}


def test_a_read_only_cache_folder_degrades_to_no_cache(tmp_path, monkeypatch):
    # root ignores folder permissions (CI runs as root), so the refusal a read-only folder gives is injected
    import embench.core.atomic as atomic  # every write of the cache goes through it

    def read_only(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    cache = EmbeddingCache(tmp_path / "ro", "ns")
    monkeypatch.setattr(atomic, "open", read_only, raising=False)
    with pytest.warns(UserWarning, match="Permission denied"):
        cache.put_many([text_key("a")], _vector("a")[None])
    monkeypatch.undo()
    assert cache.get_many([text_key("a")]) == {}


def test_a_failed_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    cache = EmbeddingCache(tmp_path, "ns")
    real_replace = os.replace

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.warns(UserWarning, match="No space left"):
        cache.put_many([text_key("a")], _vector("a")[None])
    monkeypatch.setattr(os, "replace", real_replace)
    assert [p.name for p in (tmp_path / "ns").iterdir()] == []


class KeyedEncoder:
    """An encoder whose vector of a text is ``_vector(text)``: no model, so engine tests stay fast."""

    name = "keyed"

    def token_lengths(self, texts):
        return np.array([len(t) for t in texts])

    def encode_batch(self, texts):
        return np.stack([_vector(t) for t in texts])

    def cache_key(self):
        return "keyed-v1"


def test_the_engine_still_encodes_when_its_cache_folder_is_a_file(tmp_path):
    from embench.encoding.engine import Engine

    blocker = tmp_path / "cache"
    blocker.write_text("not a folder")
    with pytest.warns(UserWarning, match="cache"):  # said before any encoding
        engine = Engine(KeyedEncoder(), batch_size=2, cache_dir=blocker)
    out = engine.embed(["one", "two", "three"])
    assert np.array_equal(out, np.stack([_vector(t) for t in ("one", "two", "three")]))


def test_a_shard_copied_in_from_another_encoder_configuration_is_not_served(tmp_path):
    import shutil

    keys = [text_key("same text")]
    EmbeddingCache(tmp_path, "other-config").put_many(keys, _vector("wrong")[None])
    (tmp_path / "ns").mkdir()
    for p in (tmp_path / "other-config").glob("*.npz"):
        shutil.copy(p, tmp_path / "ns" / p.name)
    with pytest.warns(UserWarning, match="damaged"):
        assert EmbeddingCache(tmp_path, "ns").get_many(keys) == {}
