"""Ctrl-C or SIGTERM while the engine writes a cache shard: the interrupt takes effect once the shard is written, and
every vector the pass computed, of every view, is in the cache (README: "what was finished is kept"). The signal is
sent from inside the shard's write, so where it lands does not depend on timing."""

from __future__ import annotations

import signal

import pytest

import embench
import embench.encoding.cache as cache_mod
import embench.encoding.engine as engine_mod
from embench.core import signals
from embench.core.signals import terminate_as_interrupt
from embench.encoding.cache import EmbeddingCache, text_key
from embench.encoding.engine import Engine, fill_views

TEXTS = [f"sentence number {i} about {topic}" for i, topic in enumerate(["cats", "rain", "the sea", "a long road home",
                                                                         "music", "bread", "trains", "snow"])]


@pytest.fixture
def interrupt_in_first_shard_write(monkeypatch):
    """Sends ``signum`` to this process from inside the first shard's write (before its bytes are out), once; Ctrl-C
    raises KeyboardInterrupt, as in an interactive process (a background job may have it ignored)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    terminate_as_interrupt()  # SIGTERM as the CLI has it (conftest puts the test process's handler back)
    monkeypatch.setattr(signals, "_TERMINATED", False)  # put back after: a later CLI test would exit 143, not 130
    real = cache_mod.shard_checksum
    sent = []

    def arm(signum):
        def checksum_then_signal(*a):
            if not sent:
                sent.append(signum)
                signal.raise_signal(signum)
            return real(*a)

        monkeypatch.setattr(cache_mod, "shard_checksum", checksum_then_signal)
        return sent

    yield arm
    signal.signal(signal.SIGINT, before)


def _stored(cache_dir, engine, texts):
    """The texts a fresh reader of ``engine``'s cache folder finds (what the next run would not encode again)."""
    fresh = EmbeddingCache(cache_dir, engine.encoder.cache_key())
    return {t for t in texts if text_key(t) in fresh.stored([text_key(t)])}


@pytest.mark.slow  # three views of a model loaded for the test: over 0.3 s on 2 cores
def test_an_interrupt_in_the_first_views_final_flush_keeps_every_views_vectors(tiny_bert_dir, cache_dir,
                                                                             interrupt_in_first_shard_write):
    """The pass's last flush writes one shard per view: an interrupt inside the first one removed its temporary file
    and left the loop, so no view kept a vector."""
    enc = embench.load_model(tiny_bert_dir, device="cpu")
    engines = [Engine(enc.view(layer=layer), batch_size=4, cache_dir=cache_dir) for layer in (0, 1, 2)]
    sent = interrupt_in_first_shard_write(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        fill_views(engines, TEXTS)
    assert sent == [signal.SIGINT]
    for e in engines:
        assert _stored(cache_dir, e, TEXTS) == set(TEXTS), e.encoder.name


@pytest.mark.slow
def test_sigterm_in_a_flush_mid_pass_keeps_the_chunk_that_was_leaving_the_batches(tiny_bert_dir, cache_dir, monkeypatch,
                                                                                 interrupt_in_first_shard_write):
    """The first shard is written while the next chunk is handed over: the interrupt raised in it lost that chunk
    (computed, but neither kept nor written) along with the shard itself."""
    monkeypatch.setattr(engine_mod, "FLUSH_EVERY", 2)  # a flush every chunk of two texts
    computed: list[str] = []
    real = engine_mod.forward_halving
    monkeypatch.setattr(engine_mod, "forward_halving", lambda engine, batch, *a: computed.extend(batch) or real(engine, batch, *a))
    engine = Engine(embench.load_model(tiny_bert_dir, device="cpu"), batch_size=2, cache_dir=cache_dir)
    sent = interrupt_in_first_shard_write(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt):
        engine.embed(TEXTS)
    assert sent == [signal.SIGTERM] and len(computed) == 4  # the second batch was computed when the first chunk landed
    assert _stored(cache_dir, engine, TEXTS) == set(computed)
    assert Engine(engine.encoder, batch_size=2, cache_dir=cache_dir).missing(TEXTS) == [t for t in TEXTS if t not in computed]
