"""The encoding engine: batch-size independence, dedup, the disk cache, empty texts, NaN."""

from __future__ import annotations

import numpy as np
import pytest

import embench
from embench.core.errors import EmbeddingError
from embench.encoding.cache import text_key
from embench.encoding.engine import Engine

TEXTS = [
    "A man is playing a guitar.", "A woman slices an onion.", "x", "Two dogs run through a field of tall grass.",
    "The stock market fell sharply on Monday after the announcement of new tariffs on imported steel.",
    "A man is playing a guitar.", "Short one.", "Kids play football in the park on a sunny afternoon.",
] * 5


class CountingEncoder:
    """Wraps an encoder and counts the texts it is asked to encode."""

    def __init__(self, inner):
        self.inner, self.name, self.seen = inner, inner.name, []

    def token_lengths(self, texts):
        return self.inner.token_lengths(texts)

    def encode_batch(self, texts):
        self.seen += texts
        return self.inner.encode_batch(texts)

    def cache_key(self):
        return self.inner.cache_key()

    def describe(self):
        return self.inner.describe()


@pytest.mark.slow  # over 1 s: the fast tier stays under a minute
def test_batch_1_and_batch_128_agree_in_fp32(tiny_bert_dir, minilm_path):
    for model in (tiny_bert_dir, "all-MiniLM-L6-v2"):
        enc = embench.load_model(model, device="cpu")
        one = Engine(enc, batch_size=1).embed(TEXTS)
        many = Engine(enc, batch_size=128).embed(TEXTS)
        assert np.abs(one - many).max() < 1e-5


def test_each_unique_text_is_encoded_once_and_order_is_kept(tiny_bert_dir):
    enc = CountingEncoder(embench.load_model(tiny_bert_dir, device="cpu"))
    engine = Engine(enc, batch_size=3)
    out = engine.embed(TEXTS)
    assert sorted(enc.seen) == sorted(set(TEXTS))
    again = engine.embed(list(reversed(TEXTS)))  # a second task with the same texts: nothing new
    assert len(enc.seen) == len(set(TEXTS))
    np.testing.assert_array_equal(again, out[::-1])
    ref = enc.inner.encode_batch(TEXTS[:1])
    np.testing.assert_allclose(out[0], ref[0], atol=1e-5)


def test_prefetch_encodes_all_tasks_in_one_length_sorted_pass_and_counts_each_text_once(tiny_bert_dir, tmp_path):
    enc = CountingEncoder(embench.load_model(tiny_bert_dir, device="cpu"))
    warm = Engine(enc, batch_size=4, cache_dir=tmp_path)
    warm.embed(TEXTS[:2])  # two texts already in the disk cache
    enc.seen.clear()
    engine = Engine(enc, batch_size=4, cache_dir=tmp_path)
    task_a, task_b = TEXTS[:5], TEXTS[3:]  # overlapping tasks
    shares = engine.prefetch([task_a, task_b])
    assert shares == [{"encoded": 3, "from_cache": 2}, {"encoded": len(set(TEXTS)) - 5, "from_cache": 0}]
    assert sorted(enc.seen) == sorted(set(TEXTS) - set(TEXTS[:2]))  # each new text once, across both tasks
    lengths = enc.inner.token_lengths(enc.seen)
    assert list(lengths) == sorted(lengths, reverse=True)  # one pass sorted across the tasks, not per task
    encoded = engine.stats["encoded"]
    np.testing.assert_allclose(engine.embed(task_b), Engine(enc.inner, batch_size=4).embed(task_b), atol=1e-5)
    assert engine.stats["encoded"] == encoded  # scoring afterwards is all memory hits


def test_batches_are_sorted_by_token_length(tiny_bert_dir):
    enc = CountingEncoder(embench.load_model(tiny_bert_dir, device="cpu"))
    Engine(enc, batch_size=2).embed(TEXTS)
    lengths = enc.token_lengths(enc.seen)
    assert list(lengths) == sorted(lengths, reverse=True)


def test_disk_cache_makes_a_second_engine_encode_nothing(tiny_bert_dir, cache_dir):
    first = Engine(embench.load_model(tiny_bert_dir, device="cpu"), cache_dir=cache_dir)
    vecs = first.embed(TEXTS)
    enc = CountingEncoder(embench.load_model(tiny_bert_dir, device="cpu"))
    second = Engine(enc, cache_dir=cache_dir)
    np.testing.assert_array_equal(second.embed(TEXTS), vecs)
    assert enc.seen == [] and second.stats["from_cache"] == len(set(TEXTS))
    assert not enc.inner.loaded  # the weights were never read
    # Another pooling is another cache entry.
    other = CountingEncoder(embench.load_model(tiny_bert_dir, device="cpu", pooling="mean"))
    Engine(other, cache_dir=cache_dir).embed(TEXTS)
    assert len(other.seen) == len(set(TEXTS))


def test_interrupted_encoding_keeps_finished_batches(tiny_bert_dir, cache_dir, monkeypatch):
    import embench.encoding.engine as engine_mod

    monkeypatch.setattr(engine_mod, "FLUSH_EVERY", 2)
    inner = embench.load_model(tiny_bert_dir, device="cpu")

    class Interrupting(CountingEncoder):
        def encode_batch(self, texts):
            if len(self.seen) >= 4:
                raise KeyboardInterrupt
            return super().encode_batch(texts)

    with pytest.raises(KeyboardInterrupt):
        Engine(Interrupting(inner), batch_size=2, cache_dir=cache_dir).embed(TEXTS)
    resumed = CountingEncoder(inner)
    Engine(resumed, batch_size=2, cache_dir=cache_dir).embed(TEXTS)
    assert len(resumed.seen) == len(set(TEXTS)) - 4


def test_empty_text_is_encoded_with_a_warning(tiny_bert_dir):
    engine = Engine(embench.load_model(tiny_bert_dir, device="cpu"))
    with pytest.warns(UserWarning, match="1 empty text"):
        out = engine.embed(["", "not empty"])
    assert out.shape == (2, 32) and np.isfinite(out).all()


def test_nan_embedding_names_the_text(tiny_bert_dir):
    inner = embench.load_model(tiny_bert_dir, device="cpu")

    class NaNOn(CountingEncoder):
        def encode_batch(self, texts):
            out = super().encode_batch(texts)
            out[[i for i, t in enumerate(texts) if t == "poison"]] = np.nan
            return out

    with pytest.raises(EmbeddingError, match="'poison'"):
        Engine(NaNOn(inner)).embed(["fine", "poison", "also fine"])


def test_batch_size_must_be_positive(tiny_bert_dir):
    with pytest.raises(embench.core.errors.EmbenchError, match="--batch-size"):
        Engine(embench.load_model(tiny_bert_dir), batch_size=0)


@pytest.mark.parametrize("setting", ["", "system"])
def test_batch_memory_is_kept_on_glibc_unless_opted_out(setting):
    """glibc's thresholds are set once per process (a fresh one here: the setting is process-wide)."""
    import platform
    import subprocess
    import sys

    # before the thresholds are set there is nothing to hand back; after, a freed 100 MB block stays in
    # the heap (below the raised thresholds) until release_batch_memory() trims it
    code = ("import embench.encoding.allocator as a; print(a.release_batch_memory(), a.keep_batch_memory(), "
            "a.keep_batch_memory(), a._done); b = bytearray(100 << 20); del b; print(a.release_batch_memory())")
    env = {**__import__("os").environ, "EMBENCH_MALLOC": setting}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split()
    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    expected = str(glibc and setting != "system")
    assert out == ["False"] + [expected] * 4


def test_every_pass_of_several_batches_hands_its_batch_memory_back_when_it_ends(tiny_bert_dir, monkeypatch):
    import embench.encoding.engine as engine_module

    calls = []
    monkeypatch.setattr(engine_module, "release_batch_memory", lambda: calls.append(1) or True)
    engine = Engine(embench.load_model(tiny_bert_dir), batch_size=2)
    engine.embed(["one", "two", "three"])
    assert calls == [1]  # once per pass, not per batch
    engine.embed(["one", "four", "five", "six"])
    assert calls == [1, 1]
    engine.embed(["seven", "eight"])  # one batch: its memory stays for the next call, as between batches
    assert calls == [1, 1]


def test_the_returned_array_is_filled_as_chunks_land_and_equals_the_rows_stacked(tiny_bert_dir, cache_dir, monkeypatch):
    """``embed`` writes each landed chunk's rows into its output during the pass (``row_gather.py``) and the rest
    (memory and cache hits) at the end: the array is the rows of every text in order, duplicates included."""
    import embench.encoding.engine as engine_mod
    from embench.encoding.row_gather import RowGather

    enc = embench.load_model(tiny_bert_dir, device="cpu")
    Engine(enc, batch_size=4, cache_dir=cache_dir).embed(TEXTS[:3])  # three texts on disk
    monkeypatch.setattr(engine_mod, "FLUSH_EVERY", 2)  # vectors land two or three texts at a time
    landed = []
    real_take = RowGather.take
    monkeypatch.setattr(RowGather, "take", lambda self, keys, vecs: landed.append(len(keys)) or real_take(self, keys, vecs))
    engine = Engine(enc, batch_size=2, cache_dir=cache_dir)
    engine.embed(TEXTS[3:5])  # two more in this engine's memory
    landed.clear()
    texts = TEXTS[::-1] + ["a text of its own"]
    out = engine.embed(texts)
    assert len(landed) > 1 and sum(landed) == len(set(texts)) - 5  # chunk by chunk; hits are not landed rows
    np.testing.assert_array_equal(out, np.stack([engine._memory[text_key(t)] for t in texts]))
    reference = Engine(enc, batch_size=1).embed(texts)
    np.testing.assert_allclose(out, reference, atol=1e-5)
    assert out.dtype == np.float32 and out.flags["C_CONTIGUOUS"]


def test_a_gather_writes_each_requested_row_at_every_position_of_its_key():
    from embench.encoding.row_gather import RowGather

    gather = RowGather(["a", "b", "a", "c"])
    gather.take(["x", "a"], np.array([[9.0, 9.0], [1.0, 2.0]], dtype=np.float32))  # "x" was not asked for
    gather.take(["b"], np.array([[3.0, 4.0]], dtype=np.float32))
    out = gather.finish({"c": np.array([5.0, 6.0], dtype=np.float32)})  # "c": a hit, from memory
    np.testing.assert_array_equal(out, [[1, 2], [3, 4], [1, 2], [5, 6]])
    nothing_landed = RowGather(["c", "c"]).finish({"c": np.array([5.0, 6.0], dtype=np.float32)})
    np.testing.assert_array_equal(nothing_landed, [[5, 6], [5, 6]])


@pytest.mark.slow
def test_encoded_batches_reach_the_cache_once_flush_seconds_have_passed_whatever_their_count(tiny_bert_dir, tmp_path,
                                                                                           monkeypatch):
    """Shards were written every FLUSH_EVERY (4,096) texts only: a kill -9, which no handler sees, a minute into a CPU
    pass left none. Once FLUSH_SECONDS have passed since the last write, what is encoded is written whatever its count;
    before that, the count rule keeps shards large."""
    import embench.encoding.engine as engine_mod

    enc = embench.load_model(tiny_bert_dir, device="cpu")
    real = engine_mod.forward_halving

    def shards_before_each_batch(cache_dir):
        seen = []
        monkeypatch.setattr(engine_mod, "forward_halving",
                            lambda *a: seen.append(len(list(cache_dir.rglob("*.npz")))) or real(*a))
        Engine(enc, batch_size=2, cache_dir=cache_dir).embed(TEXTS)
        return seen, len(list(cache_dir.rglob("*.npz")))

    assert shards_before_each_batch(tmp_path / "count") == ([0, 0, 0, 0], 1)  # one shard, at the end
    monkeypatch.setattr(engine_mod, "FLUSH_SECONDS", 0.0)  # every batch is past it
    assert shards_before_each_batch(tmp_path / "time") == ([0, 1, 2, 3], 4)  # each batch finds the ones before it
