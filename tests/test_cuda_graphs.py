"""CUDA graphs per bucketed batch shape (``--cuda-graphs``, ``embench/encoding/cuda_graphs.py``), checked on a CPU:
the bucketing, and the padded path with the graphs' static-buffer protocol run eagerly (``capture=False``), which
must give every text the vector the ordinary engine gives it. Only ``torch.cuda.CUDAGraph`` itself needs a GPU
(``build/gpu/RUN_ENCODE.md``)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import embench
import embench.encoding.batching as batching
from embench.encoding.cuda_graphs import ShapeGraphs, bucket_rows, bucket_width
from embench.encoding.engine import Engine, embed_views

pytestmark = pytest.mark.filterwarnings("ignore:1 empty text")  # the empty text is one of the shapes on purpose

TEXTS = [
    "A man is playing a guitar.", "A woman slices an onion.", "x", "Two dogs run through a field of tall grass.",
    "The stock market fell sharply on Monday after the announcement of new tariffs on imported steel.",
    "Kids play football in the park on a sunny afternoon.", "Short one.", "", "¿Dónde está la biblioteca?",
    "A very long sentence " * 12,
] + [f"sentence number {i} " + "with some more words " * (i % 7) for i in range(40)]


def test_widths_round_up_by_a_quarter_of_their_power_of_two_and_stop_at_the_maximum_length():
    # by hand: below 32 steps of 8; 32-63 steps of 8; 64-127 steps of 16; 128-255 steps of 32; 256-511 steps of 64
    cases = {1: 8, 8: 8, 9: 16, 17: 24, 33: 40, 63: 64, 64: 64, 65: 80, 100: 112, 128: 128, 129: 160, 300: 320, 500: 512}
    assert {w: bucket_width(w, 512) for w in cases} == cases
    assert bucket_width(100, 100) == 100 and bucket_width(65, 70) == 70  # never past the maximum length
    widths = {bucket_width(w, 512) for w in range(1, 513)}
    assert len(widths) == 20  # 8, 16, ..., 64 (8), 80-128 (4), 160-256 (4), 320-512 (4)


def test_rows_are_the_widths_fixed_count_or_a_multiple_of_an_eighth_of_it():
    # width 64 under 65,536 tokens: 1,024 rows; an eighth is 128
    assert bucket_rows(1024, 64, None, 65536) == 1024
    assert bucket_rows(1000, 64, None, 65536) == 1024
    assert bucket_rows(129, 64, None, 65536) == 256
    assert bucket_rows(1, 64, None, 65536) == 128
    assert bucket_rows(14, 64, 100, 65536) == 26  # --batch-size 100 caps it: eighths of 13
    assert bucket_rows(5, 64, 128, None) == 16  # no budget: the texts cap alone
    assert bucket_rows(1, 1000, None, 512) == 1  # a text longer than the budget goes alone


class _Counted:
    """An encoder whose tokens are its texts' words: what the batching sees, without a model."""

    device = "cuda"

    def __init__(self, graphs):
        self.graphs = graphs

    def pretokenize(self, texts):
        return {"input_ids": [[1] * len(t.split()) for t in texts]}

    def collate(self, features, shape=None):
        return {"input_ids": np.zeros(shape or (len(features["input_ids"]), max(map(len, features["input_ids"])))),
                "longest": max(map(len, features["input_ids"]))}


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_bucketed_batches_hold_every_text_once_in_few_shapes_within_the_budget(monkeypatch):
    rng = np.random.default_rng(0)
    texts = [" ".join(["w"] * int(n)) for n in np.clip(rng.lognormal(3.5, 0.8, 20000), 1, 512)]
    monkeypatch.setattr(batching, "GPU_FIRST_CHUNK", 512)  # several chunks, as on a GPU
    monkeypatch.setattr(batching, "GPU_TOKENIZE_CHUNK", 1024)
    for budget in (65536, 16384):
        engine = type("E", (), {"encoder": _Counted(ShapeGraphs(512)), "batch_size": None, "batch_tokens": budget,
                                "stats": {"padded_tokens": 0}})()
        seen, shapes = [], set()
        for idx, batch, enc in batching.batches(engine, texts, on_cpu=False):
            rows, width = enc["input_ids"].shape
            seen += list(idx)
            shapes.add((rows, width))
            assert rows >= len(batch) and width >= enc["longest"] and width == bucket_width(enc["longest"], 512)
            assert rows * width <= budget or len(batch) == 1  # the budget holds for the padded shape
            assert rows == bucket_rows(len(batch), width, None, budget)
        assert sorted(seen) == list(range(len(texts)))  # every text in exactly one batch
        widths = {w for _, w in shapes}
        assert len(shapes) <= 8 * len(widths) and len(widths) <= 20
        plain = type("E", (), {"encoder": _Counted(None), "batch_size": None, "batch_tokens": budget,
                               "stats": {"padded_tokens": 0}})()
        eager = {enc["input_ids"].shape for _, _, enc in batching.batches(plain, texts, on_cpu=False)}
        assert len(shapes) < len(eager)  # and however many texts, at most 8 row counts for each of 20 widths


def _graphed(folder, **options):
    enc = embench.load_model(folder, device="cpu", **options)
    # the protocol without torch.cuda.CUDAGraph, every batch through the static buffers from a shape's first use
    enc.graphs = ShapeGraphs(enc.settings.max_length, capture=False, capture_on_use=1)
    return enc


def _spy_collate(monkeypatch, enc):
    seen = []
    real = type(enc).collate

    def collate(self, features, shape=None):
        seen.append((len(features["input_ids"]), max(map(len, features["input_ids"])), shape))
        return real(self, features, shape)

    monkeypatch.setattr(type(enc), "collate", collate)
    return seen


@pytest.mark.parametrize("pooling", ["mean", "cls", "cls_before_pooler"])
def test_padding_to_the_buckets_changes_no_bert_vector(tiny_bert_dir, pooling, monkeypatch, one_thread):
    reference = Engine(embench.load_model(tiny_bert_dir, device="cpu", pooling=pooling), batch_tokens=256).embed(TEXTS)
    enc = _graphed(tiny_bert_dir, pooling=pooling)
    seen = _spy_collate(monkeypatch, enc)
    out = Engine(enc, batch_tokens=256).embed(TEXTS)
    np.testing.assert_allclose(out, reference, atol=1e-6, rtol=0)
    assert any(shape[0] > n for n, _, shape in seen) and any(shape[1] > w for _, w, shape in seen)  # rows and columns added
    assert enc.graphs.stats["eager"] == 0 and len(enc.graphs._shapes) <= len(seen)


def test_padding_on_the_left_changes_no_decoder_vector(tiny_llama_dir, monkeypatch, one_thread):
    reference = Engine(embench.load_model(tiny_llama_dir, device="cpu"), batch_tokens=256).embed(TEXTS)
    enc = _graphed(tiny_llama_dir)
    assert enc.tokenizer.padding_side == "left" and enc.pooling == "last_token"
    seen = _spy_collate(monkeypatch, enc)
    out = Engine(enc, batch_tokens=256).embed(TEXTS)
    np.testing.assert_allclose(out, reference, atol=1e-6, rtol=0)
    assert any(shape[0] > n for n, _, shape in seen) and any(shape[1] > w for _, w, shape in seen)


def test_the_one_pass_views_go_through_the_same_shapes(tiny_bert_dir, one_thread):
    enc = _graphed(tiny_bert_dir, pooling="mean")
    views = [enc.view(0, "mean"), enc.view(1, "max"), enc.view(None, "cls")]
    assert all(v.graphs is enc.graphs for v in views)  # one set of graphs per loaded model
    got = embed_views([Engine(v, batch_tokens=256) for v in views], TEXTS)
    plain = embench.load_model(tiny_bert_dir, device="cpu", pooling="mean")
    want = embed_views([Engine(plain.view(0, "mean"), batch_tokens=256), Engine(plain.view(1, "max"), batch_tokens=256),
                        Engine(plain.view(None, "cls"), batch_tokens=256)], TEXTS)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, atol=1e-6, rtol=0)


def test_a_shape_runs_eagerly_at_its_first_batch_and_from_its_static_buffers_after(tiny_bert_dir, one_thread):
    enc = embench.load_model(tiny_bert_dir, device="cpu", pooling="mean")
    enc.graphs = graphs = ShapeGraphs(enc.settings.max_length, capture=False)  # captured at a shape's second batch
    first = Engine(enc, batch_tokens=256).embed(TEXTS)
    eager = graphs.stats["eager"]
    assert eager == len(graphs._uses) > 1  # each shape's first batch ran eagerly, the rest from its static buffers
    assert len(graphs._shapes) == sum(n > 1 for n in graphs._uses.values())
    second = Engine(enc, batch_tokens=256).embed(TEXTS)  # the same shapes again: all from their static buffers
    assert graphs.stats["eager"] == eager and set(graphs._shapes) == set(graphs._uses)
    np.testing.assert_allclose(second, first, atol=1e-6, rtol=0)


def test_a_capture_that_fails_leaves_the_pass_eager_with_one_warning(tiny_bert_dir, caplog, one_thread):
    """Capture on a machine without CUDA fails at its first step: those views then run eagerly, said once."""
    reference = Engine(embench.load_model(tiny_bert_dir, device="cpu", pooling="mean"), batch_tokens=256).embed(TEXTS)
    enc = embench.load_model(tiny_bert_dir, device="cpu", pooling="mean")
    enc.graphs = ShapeGraphs(enc.settings.max_length, capture=True, capture_on_use=1)
    with caplog.at_level(logging.WARNING, logger="embench.encoding.cuda_graphs"):
        out = Engine(enc, batch_tokens=256).embed(TEXTS)
    np.testing.assert_allclose(out, reference, atol=1e-6, rtol=0)
    failures = [r for r in caplog.records if "capture failed" in r.getMessage()]
    assert len(failures) == 1 and "run without graphs" in failures[0].getMessage()
    assert enc.graphs.stats["captured"] == 0 and enc.graphs.stats["eager"] > 1 and not enc.graphs._shapes


def test_cuda_graphs_on_a_cpu_warn_and_change_neither_vectors_nor_cache_key(tiny_bert_dir):
    with pytest.warns(UserWarning, match=r"--cuda-graphs .* has no effect on cpu"):
        enc = embench.load_model(tiny_bert_dir, device="cpu", cuda_graphs=True)
    plain = embench.load_model(tiny_bert_dir, device="cpu")
    assert enc.graphs is None and enc.cache_key() == plain.cache_key()
    assert enc.load_spec[1]["cuda_graphs"] is True and "cuda_graphs" not in plain.load_spec[1]  # another process asks too


@pytest.mark.slow  # over a second: a whole run (fast tier under a minute)
def test_a_run_through_the_graph_path_scores_the_same_and_says_so_in_provenance(env, tiny_bert_dir, one_thread):
    plain = embench.evaluate(embench.load_model(tiny_bert_dir, device="cpu", pooling="mean"), tasks=["STS12"],
                             batch_size=64, save=False, progress=False, use_cache=False)
    graphed = embench.evaluate(_graphed(tiny_bert_dir, pooling="mean"), tasks=["STS12"], batch_size=64, save=False,
                               progress=False, use_cache=False)
    a, b = plain.records[0], graphed.records[0]
    # the vectors agree to 4e-7 (as batches of 1 and of 64 texts do); a random model's cosines have near ties,
    # whose order that rounding may swap: Spearman moved by 9e-6
    assert abs(a.main_score - b.main_score) < 1e-4
    assert a.provenance["cuda_graphs"] is False and b.provenance["cuda_graphs"] is True
