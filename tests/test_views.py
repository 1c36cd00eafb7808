"""Many views (layers x poolers) of one model from one forward pass: equal to each view alone, cached
under each view's own key, and one pass per batch where a view-at-a-time engine ran one per view."""

from __future__ import annotations

import math

import numpy as np
import pytest

from embench import load_model
from embench.core.errors import EmbenchError
from embench.encoding.engine import Engine, embed_views, fill_views
from embench.models.encoder import HFEncoder

pytestmark = pytest.mark.filterwarnings("ignore:1 empty text")

TEXTS = [
    "A man is playing a guitar.",
    "A woman slices an onion on a wooden board while the radio plays.",
    "Two dogs run.",
    "The cat sat on the mat, and then it sat on the mat again, for a very long while.",
    "",
    "Stocks fell sharply on Monday.",
    "A man is playing a guitar.",  # a repeat: served from memory, not encoded twice
]
LAYER_POOLERS = ["cls", "cls_before_pooler", "mean", "max", "last_token"]
FIXED_POOLERS = ["first_last_avg", "embed_last_avg"]  # read fixed layers


@pytest.fixture(scope="module")
def tiny_bert4(tiny_model):
    """A random 4-layer BERT with a pooler head and MiniLM's tokenizer."""
    from transformers import BertConfig, BertModel

    return tiny_model("tiny-bert4", lambda vocab: BertModel(BertConfig(
        vocab_size=vocab, hidden_size=32, num_hidden_layers=4, num_attention_heads=2, intermediate_size=64)))


def _all_views(base: HFEncoder) -> list[tuple[int | None, str]]:
    return [(layer, p) for layer in range(base.num_layers + 1) for p in LAYER_POOLERS] + [(None, p) for p in FIXED_POOLERS]


def _check_views_equal_alone(model, cache, batch_size=3):
    base = load_model(model, device="cpu")
    specs = _all_views(base)
    views = [base.view(layer, p) for layer, p in specs]
    engines = [Engine(v, batch_size=batch_size, cache_dir=cache) for v in views]
    shared = embed_views(engines, TEXTS)
    assert engines[0].stats["forward_batches"] == math.ceil(len(set(TEXTS)) / batch_size)  # one pass for all views
    for (layer, pooling), got in zip(specs, shared, strict=True):
        alone_encoder = load_model(model, device="cpu", layer=layer, pooling=pooling)
        alone = Engine(alone_encoder, batch_size=batch_size).embed(TEXTS)
        np.testing.assert_allclose(got, alone, atol=1e-6, rtol=0, err_msg=f"layer {layer}, {pooling}")
        # the view's cache key is that encoder's: a later request for this view alone is a cache hit
        assert alone_encoder.cache_key() == views[specs.index((layer, pooling))].cache_key()
        again = Engine(load_model(model, device="cpu", layer=layer, pooling=pooling), cache_dir=cache)
        np.testing.assert_array_equal(again.embed(TEXTS), got)
        assert again.stats["encoded"] == 0 and again.stats["from_cache"] == len(set(TEXTS))
        assert not again.encoder.loaded  # every vector from the cache: the weights were never read


@pytest.mark.slow  # over 1 s: the fast tier stays under a minute
def test_every_view_from_one_pass_equals_that_view_alone_tiny_bert(tiny_bert_dir, tmp_path, one_thread):
    _check_views_equal_alone(tiny_bert_dir, tmp_path / "cache")


@pytest.mark.slow
def test_every_view_from_one_pass_equals_that_view_alone_minilm(tmp_path, one_thread):
    _check_views_equal_alone("all-MiniLM-L6-v2", tmp_path / "cache", batch_size=4)


def test_views_share_the_weights_and_only_missing_views_are_computed(tiny_bert_dir, tmp_path, one_thread):
    base = load_model(tiny_bert_dir, device="cpu")
    v1, v2 = base.view(1, "mean"), base.view(None, "cls")
    assert v1.model is base.model and v2.tokenizer is base.tokenizer
    cache = tmp_path / "cache"
    Engine(v1, cache_dir=cache).embed(TEXTS[:3])  # v1 has the first three texts already
    engines = [Engine(v1, cache_dir=cache, batch_size=2), Engine(v2, cache_dir=cache, batch_size=2)]
    embed_views(engines, TEXTS)
    unique = len(set(TEXTS))
    assert engines[0].stats["from_cache"] == 3 and engines[0].stats["encoded"] == unique - 3
    assert engines[1].stats["encoded"] == unique
    assert engines[0].stats["forward_batches"] == math.ceil(unique / 2)  # the union, once
    # everything is in memory now: no pass at all
    before = engines[0].stats["forward_batches"]
    embed_views(engines, TEXTS)
    assert engines[0].stats["forward_batches"] == before


def test_filled_views_are_read_one_at_a_time_without_another_pass_and_released(tiny_bert_dir, one_thread):
    base = load_model(tiny_bert_dir, device="cpu")
    views = [base.view(layer, "mean") for layer in range(base.num_layers + 1)]
    stacked = embed_views([Engine(v, batch_size=2) for v in views], TEXTS)
    engines = [Engine(v, batch_size=2) for v in views]
    fill_views(engines, TEXTS)
    passes = engines[0].stats["forward_batches"]
    assert passes == math.ceil(len(set(TEXTS)) / 2)
    for e, expected in zip(engines, stacked, strict=True):
        np.testing.assert_array_equal(e.embed(TEXTS), expected)  # a memory hit: no forward pass
        e.release()
        assert not e._memory
    assert engines[0].stats["forward_batches"] == passes and all(e.stats["encoded"] == len(set(TEXTS)) for e in engines)


@pytest.mark.slow
def test_layers_analysis_lets_go_of_each_layer_once_it_is_scored(tiny_bert4, tmp_path, data_root, one_thread):
    """Each layer's vectors leave memory after its row (the cache keeps them), so a long suite per layer
    does not hold every layer's vectors of every text at once."""
    from embench.analysis.inputs import make_context, model_refs
    from embench.analysis.layers import layers

    ctx = make_context(data_root, tmp_path / "cache", True, 512, False)
    refs = model_refs([str(tiny_bert4)])
    impl = layers.__wrapped__  # the analysis itself, on this context (the public function makes its own)
    frame = impl(refs, ctx, tmp_path / "out", layers="0,2,4", dataset=None).tables["layers"]
    views = [refs[0].encoder(layer=n, pooling="mean") for n in (0, 2, 4)]
    assert all(id(v) in ctx._engines and not ctx._engines[id(v)]._memory for v in views)
    assert frame["stsb_spearman"].nunique() == 3
    again = impl(refs, ctx, tmp_path / "out2", layers="0,2,4", dataset=None).tables["layers"]  # from the cache
    np.testing.assert_array_equal(again["stsb_spearman"], frame["stsb_spearman"])
    assert all(ctx._engines[id(v)].stats["from_cache"] > 0 for v in views)


@pytest.mark.slow
def test_layers_analysis_runs_one_forward_pass_per_batch_not_one_per_layer(tiny_bert4, tmp_path, data_root, monkeypatch,
                                                                          one_thread):
    from embench.analysis import run

    calls = []
    forward = HFEncoder.forward_hidden
    monkeypatch.setattr(HFEncoder, "forward_hidden", lambda self, *a, **k: calls.append(1) or forward(self, *a, **k))
    result = run("layers", [str(tiny_bert4)], tmp_path / "out", data=data_root, use_cache=False, batch_size=512,
                 dataset=None)
    frame = result.tables["layers"]
    assert list(frame["layer"]) == [0, 1, 2, 3, 4]
    from embench.analysis.inputs import stsb, unique

    pairs = stsb(__import__("embench").data.DataRoot.resolve(data_root))
    texts = unique(pairs.left + pairs.right)
    assert len(calls) == math.ceil(len(texts) / 512)  # five layers, one pass per batch (not five)
    # and each layer's score is that layer's own: layer 0 (embedding output) differs from layer 4
    assert frame["stsb_spearman"].nunique() == 5



@pytest.mark.slow
def test_layers_with_a_suite_put_its_texts_in_the_shared_pass(tiny_bert4, tmp_path, data_root, monkeypatch, one_thread):
    """--suite: every layer's suite score reads the vectors of the one shared pass (no pass per layer)."""
    from embench.analysis import run
    from embench.analysis.inputs import make_context, stsb, unique
    from embench.analysis.layers import suite_texts

    calls = []
    forward = HFEncoder.forward_hidden
    monkeypatch.setattr(HFEncoder, "forward_hidden", lambda self, *a, **k: calls.append(1) or forward(self, *a, **k))
    result = run("layers", [str(tiny_bert4)], tmp_path / "out", data=data_root, cache_dir=tmp_path / "cache",
                 batch_size=512, dataset=None, layers="0,4", suite=["STS16"])
    frame = result.tables["layers"]
    pairs = stsb(__import__("embench").data.DataRoot.resolve(data_root))
    ctx = make_context(data_root, None, False, 512, False)
    texts = unique(pairs.left + pairs.right + suite_texts("STS16,", ctx))
    assert len(calls) == math.ceil(len(texts) / 512)  # STS-B and STS16 for both layers: one pass, then cache hits
    assert frame["tasks_average"].notna().all() and frame["tasks_average"].nunique() == 2

def test_an_impossible_view_is_named_before_any_encoding(tiny_bert_dir, tmp_path):
    base = load_model(tiny_bert_dir, device="cpu")
    with pytest.raises(EmbenchError, match=r"--layer 7 is out of range .* layers 0 \(embedding output\) to 2"):
        base.view(7, "mean")
    with pytest.raises(EmbenchError, match="mean"):  # did-you-mean on an unknown pooler
        base.view(1, "meen")
    assert not base.loaded


def test_views_of_different_passes_are_refused_by_name(tiny_bert_dir):
    a = load_model(tiny_bert_dir, device="cpu")
    b = load_model(tiny_bert_dir, device="cpu", max_length=16)
    with pytest.raises(EmbenchError, match="max length 16"):
        embed_views([Engine(a), Engine(b)], TEXTS)
    with pytest.raises(EmbenchError, match="not a view of this encoder"):
        a.encode_views(TEXTS[:2], [b])


@pytest.mark.parametrize("side", ["right", "left"])
def test_tokenised_once_then_padded_per_batch_equals_the_tokenizer_padding(tiny_bert_dir, side):
    import torch

    enc = load_model(tiny_bert_dir, device="cpu", max_length=8)
    enc.tokenizer.padding_side = side
    texts = ["a b c", "A much longer sentence with many, many words that is cut at eight tokens.", "", "x"]
    ours = enc.collate(enc.pretokenize(texts))
    theirs = enc.tokenizer(texts, padding=True, truncation=True, max_length=8, return_tensors="pt")
    assert sorted(ours) == sorted([*theirs, "lengths"]) and all(torch.equal(ours[k], theirs[k]) for k in theirs)
    assert list(enc.token_lengths(texts)) == theirs["attention_mask"].sum(1).tolist() == ours["lengths"].tolist()
    assert ours["lengths"].device.type == "cpu"  # known to the host without asking the device


@pytest.mark.slow
def test_per_token_analyses_run_together_share_one_pass_and_equal_each_alone(tiny_bert_dir, tmp_path, data_root,
                                                                             monkeypatch, one_thread):
    import pandas as pd

    from embench.analysis.registry import run, run_many

    calls = []
    forward = HFEncoder.forward_hidden
    monkeypatch.setattr(HFEncoder, "forward_hidden", lambda self, *a, **k: calls.append(1) or forward(self, *a, **k))
    names = ["attention", "cls-energy", "token-dependency"]
    options = {n: {"limit": 40} for n in names}  # each reads 40 STS-B sentences in batches of 32
    together = run_many(names, [str(tiny_bert_dir)], tmp_path / "together", options, data=data_root, use_cache=False)
    assert len(calls) == math.ceil(41 / 32)  # 40 STS-B sentences + the example sentence, one pass for all three
    calls.clear()
    for n in names:
        alone = run(n, [str(tiny_bert_dir)], tmp_path / n, data=data_root, use_cache=False, **options[n])
        for stem, frame in alone.tables.items():
            pd.testing.assert_frame_equal(together[n].tables[stem], frame, atol=1e-5, check_exact=False)
    assert len(calls) == 2 * math.ceil(40 / 32) + math.ceil(41 / 32)  # alone: a pass each
    assert {f.name for f in (tmp_path / "together").iterdir()} >= {"attention_sinks.csv", "cls_energy.csv", "token_dependency.csv"}


def test_analyses_run_together_refuse_a_flag_none_of_them_has_before_loading(tmp_path):
    from typer.testing import CliRunner

    from embench.cli import app

    r = CliRunner().invoke(app, ["analyze", "attention,cls-energy", "-m", "no-such-model", "-o", str(tmp_path), "--k", "3"])
    assert r.exit_code != 0 and "none of the analyses attention, cls-energy has a --k option" in str(r.exception)
    r = CliRunner().invoke(app, ["analyze", "attention,cls-enrgy", "-m", "x", "-o", str(tmp_path)])
    assert r.exit_code != 0 and "cls-energy" in str(r.exception)  # did-you-mean on a misspelt name
