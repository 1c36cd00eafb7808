"""The engine's GPU path, checked on a CPU: token-budget batches, ids read from the Rust tokenizer, padding,
the chunked and threaded tokenisation, vectors kept as tensors and copied in chunks, weights held in bf16,
and a batch that runs out of memory split in halves. The figures from a GPU are in
``reports/benchmarks/encode_gpu.md``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import embench
import embench.encoding.batching as batching
import embench.encoding.engine as engine_mod
from embench.core.errors import EmbenchError
from embench.encoding.batching import cut_batches, resolve_batching, split_chunks
from embench.encoding.engine import Engine
from embench.models.fast_tokens import backend_of, token_ids
from embench.models.layer_stack import transformer_layers
from embench.models.pooling import PoolInput, pool_last_token

TEXTS = [
    "A man is playing a guitar.", "A woman slices an onion.", "x", "Two dogs run through a field of tall grass.",
    "The stock market fell sharply on Monday after the announcement of new tariffs on imported steel.",
    "Kids play football in the park on a sunny afternoon.", "Short one.", "", "¿Dónde está la biblioteca?",
    "A very long sentence " * 30,
]


def test_cut_batches_keeps_padded_tokens_under_the_budget_and_texts_under_the_cap():
    lengths = np.array([50, 40, 40, 12, 10, 10, 9, 3, 3, 3, 2])
    cuts = list(cut_batches(lengths, None, 100))
    # by hand, a budget of 100 and batches counted as at least 100 // 4 = 25 tokens: [50] 50 + [40 40] 80 (not
    # [50 40] 100 + [40] 40) + [12 10 10 9] 48 + [3 3 3 2] 25 (not [12 ... 2] 8 x 12 = 96, nor [12] 25 + [10 ... 2] 70):
    # 190 padded tokens, where filling each batch in turn, [50 40] [40 40] [12 ... 2], pads 250
    assert cuts == [(0, 1), (1, 3), (3, 7), (7, 11)]
    assert list(cut_batches(lengths, None, 100, least_padding=False)) == [(0, 2), (2, 4), (4, 11)]
    for lo, hi in cuts:
        assert (hi - lo) * lengths[lo] <= 100
    # at most 3 texts: the tail [12 10] 25 + [10 9 3] 30 + [3 3 2] 25 = 80 (not [12 10 10] 36 + [9 3 3] 27 + [3 2] 25)
    assert list(cut_batches(lengths, 3, 100)) == [(0, 1), (1, 3), (3, 5), (5, 8), (8, 11)]
    assert list(cut_batches(lengths, 3, 100, least_padding=False)) == [(0, 2), (2, 4), (4, 7), (7, 10), (10, 11)]
    assert list(cut_batches(lengths, 4, None)) == [(0, 4), (4, 8), (8, 11)]  # no budget: by count, in turn
    # a text longer than the budget goes alone
    assert list(cut_batches(np.array([300, 5]), None, 100)) == [(0, 1), (1, 2)]


def test_tokenisation_chunks_take_every_text_once_in_order_first_chunk_then_equal_ones():
    order = np.arange(10)[::-1]
    assert [c.tolist() for c in split_chunks(order, 3, 4)] == [[9, 8, 7], [6, 5, 4, 3], [2, 1, 0]]
    assert [c.tolist() for c in split_chunks(order, 2, 8)] == [[9, 8], [7, 6, 5, 4, 3, 2, 1, 0]]
    assert [c.tolist() for c in split_chunks(order, 10, 4)] == [order.tolist()]  # all in the first
    assert [c.tolist() for c in split_chunks(order, 20, 4)] == [order.tolist()]
    with pytest.raises(EmbenchError, match="first=0"):
        split_chunks(order, 0, 4)


def test_batching_defaults_per_device_and_bad_values():
    assert resolve_batching("cpu", None, None) == (128, None)  # the CPU keeps counting texts
    assert resolve_batching("cuda", None, None) == (None, 65536)  # a GPU: the budget alone
    assert resolve_batching("cuda:1", 64, None) == (64, 65536)  # --batch-size caps it
    assert resolve_batching("cuda", None, 0) == (128, None)  # 0: no budget, count texts
    assert resolve_batching("cpu", 32, 4096) == (32, 4096)
    with pytest.raises(EmbenchError, match="--batch-size must be at least 1"):
        resolve_batching("cpu", 0, None)
    with pytest.raises(EmbenchError, match="--batch-tokens must be 0"):
        resolve_batching("cpu", None, -5)


@pytest.mark.parametrize("side", ["right", "left"])
def test_ids_from_the_rust_backend_equal_transformers_and_leave_the_tokenizer_as_it_was(minilm_path, side):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(minilm_path)
    tok.truncation_side = side
    assert backend_of(tok) is not None
    for max_length in (8, 512):
        ours = token_ids(tok, TEXTS, max_length)
        theirs = tok(TEXTS, truncation=True, max_length=max_length, add_special_tokens=True)
        assert ours["input_ids"] == theirs["input_ids"]
        assert ours["token_type_ids"] == theirs["token_type_ids"]
    # transformers' own padded call afterwards is unchanged
    padded = tok(TEXTS[:3], padding=True, return_tensors="np")
    assert padded["input_ids"].shape[1] == max(len(x) for x in tok(TEXTS[:3])["input_ids"])


def test_a_tokenizer_without_a_rust_backend_goes_through_transformers(minilm_path):
    from transformers import AutoTokenizer

    real = AutoTokenizer.from_pretrained(minilm_path)

    class PythonTokenizer:  # what a slow tokenizer offers: a call, no Rust backend
        is_fast = False
        model_input_names = real.model_input_names

        def __call__(self, *args, **kwargs):
            return real(*args, **kwargs)

    assert backend_of(PythonTokenizer()) is None
    ours = token_ids(PythonTokenizer(), TEXTS, 16)
    assert ours["input_ids"] == real(TEXTS, truncation=True, max_length=16)["input_ids"]
    assert ours["token_type_ids"] == real(TEXTS, truncation=True, max_length=16)["token_type_ids"]


@pytest.mark.parametrize("side", ["right", "left"])
def test_collate_pads_as_the_tokenizer_does(tiny_bert_dir, side):
    enc = embench.load_model(tiny_bert_dir, device="cpu")
    enc.tokenizer.padding_side = side
    ours = enc.collate(enc.pretokenize(TEXTS))
    theirs = enc.tokenizer(TEXTS, truncation=True, max_length=enc.settings.max_length, padding=True, return_tensors="pt")
    for k in ("input_ids", "attention_mask", "token_type_ids"):
        torch.testing.assert_close(ours[k], theirs[k])


def test_last_token_pooling_finds_the_last_real_token_for_either_padding():
    states = torch.arange(2 * 4 * 1, dtype=torch.float32).reshape(2, 4, 1)
    right = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    left = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])
    # by hand: row 0's last real token is position 1 (right padding) or 3 (left); row 1's is 3
    assert pool_last_token(PoolInput((states,), right, 0, None)).flatten().tolist() == [1.0, 7.0]
    assert pool_last_token(PoolInput((states,), left, 0, None)).flatten().tolist() == [3.0, 7.0]


@pytest.mark.slow  # over 2 s: a CLI run, a model compiled or encoded text by text
def test_the_gpu_batching_path_gives_the_cpu_path_vectors(tiny_bert_dir, monkeypatch):
    """Chunked, threaded tokenisation (forced here on a CPU with a first chunk of 2 texts, then chunks of 3) and token-budget batches
    give every text the vector the CPU path gives it, in the caller's order."""
    enc = embench.load_model(tiny_bert_dir, device="cpu", pooling="mean")
    texts = TEXTS * 3 + [f"sentence number {i} with some words" for i in range(20)]
    reference = Engine(enc, batch_size=1).embed(texts)
    monkeypatch.setattr(batching, "GPU_FIRST_CHUNK", 2)
    monkeypatch.setattr(batching, "GPU_TOKENIZE_CHUNK", 3)
    real = engine_mod._batches
    seen = []

    def as_on_a_gpu(engine, texts, on_cpu):
        for idx, batch, tensors in real(engine, texts, False):
            seen.append(tensors["input_ids"].numel())
            yield idx, batch, tensors

    monkeypatch.setattr(engine_mod, "_batches", as_on_a_gpu)
    monkeypatch.setattr(engine_mod, "FLUSH_EVERY", 7)  # several host copies, landing one chunk late
    engine = Engine(enc, batch_tokens=40, cache_dir=None)
    out = engine.embed(texts)
    np.testing.assert_allclose(out, reference, atol=1e-5)
    assert len(seen) > 3  # several chunks, several batches
    long_text = max(len(x) for x in enc.pretokenize(texts)["input_ids"])
    assert all(n <= max(40, long_text) for n in seen)  # only a text longer than the budget goes over it, alone
    assert engine.stats["encoded"] == len(set(texts))
    assert engine.stats["padded_tokens"] == sum(seen)  # what the forwards computed, counted where they are cut
    # the one-pass views (every layer, another pooler) on the same path
    views = [enc.view(0, "mean"), enc.view(1, "max"), enc.view(None, "cls")]
    got = engine_mod.embed_views([Engine(v, batch_tokens=40, cache_dir=None) for v in views], texts)
    for v, g in zip(views, got, strict=True):
        np.testing.assert_allclose(g, Engine(v, batch_size=1, cache_dir=None).embed(texts), atol=1e-5)


def test_weights_held_in_bf16_change_the_cache_key_and_stay_close_to_fp32(tiny_bert_dir):
    """On a GPU a bf16 run holds the weights in bf16 (``precision: weights``); forced here on a CPU."""
    fp32 = embench.load_model(tiny_bert_dir, device="cpu", pooling="mean")
    autocast = embench.load_model(tiny_bert_dir, device="cpu", pooling="mean", dtype="bf16")
    held = embench.load_model(tiny_bert_dir, device="cpu", pooling="mean", dtype="bf16")
    held.settings.extra["precision"] = "weights"
    assert held.weights_cast and not autocast.weights_cast
    assert len({fp32.cache_key(), autocast.cache_key(), held.cache_key()}) == 3
    a, b = fp32.encode_batch(TEXTS), held.encode_batch(TEXTS)
    assert next(held.model.parameters()).dtype == torch.bfloat16
    assert next(fp32.model.parameters()).dtype == torch.float32
    assert a.dtype == b.dtype == np.float32
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert cos.min() > 0.999


def test_a_batch_out_of_memory_is_split_with_one_warning(tiny_bert_dir, monkeypatch):
    enc = embench.load_model(tiny_bert_dir, device="cpu", pooling="mean")
    reference = Engine(enc, cache_dir=None).embed(TEXTS)
    real = type(enc).encode_views

    def small_memory(self, texts, views, enc_=None, **kw):
        if len(texts) > 3:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(self, texts, views, enc_, **kw)

    monkeypatch.setattr(type(enc), "encode_views", small_memory)
    engine = Engine(enc, cache_dir=None)
    with pytest.warns(UserWarning) as caught:
        out = engine.embed(TEXTS)
    ooms = [str(w.message) for w in caught if "out of GPU memory" in str(w.message)]
    assert len(ooms) == 1 and "a batch of 10 texts" in ooms[0] and "set --batch-tokens" in ooms[0]
    np.testing.assert_allclose(out, reference, atol=1e-5)
    assert engine.stats["oom_splits"] == 3  # 10 -> 5 + 5, each 5 -> 2 + 3
    assert engine.batch_tokens is not None  # later batches are cut by the halved budget


def test_one_text_that_does_not_fit_is_an_error_naming_its_length(tiny_bert_dir, monkeypatch):
    enc = embench.load_model(tiny_bert_dir, device="cpu", pooling="mean")

    def no_memory(self, texts, views, enc_=None, **kw):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")

    monkeypatch.setattr(type(enc), "encode_views", no_memory)
    with pytest.warns(UserWarning), pytest.raises(EmbenchError, match="encoding one text of .* tokens .* --max-length"):
        Engine(enc, cache_dir=None).embed(["one", "two"])


@pytest.mark.slow  # over 2 s: a CLI run, a model compiled or encoded text by text
def test_batch_tokens_reaches_the_engine_from_the_cli_and_the_record(env, tiny_bert_dir):
    from typer.testing import CliRunner

    from embench.cli import app

    result = CliRunner().invoke(app, ["run", "-m", str(tiny_bert_dir), "-t", "STS12", "--batch-tokens", "512",
                                      "--batch-size", "16", "-q", "--format", "json"])
    assert result.exit_code == 0, result.output
    record = embench.results(model=str(tiny_bert_dir.name))[0]
    assert record.provenance["batch_tokens"] == 512 and record.provenance["batch_size"] == 16


@pytest.mark.slow  # over 2 s: a CLI run, a model compiled or encoded text by text
def test_compile_reaches_the_loader_from_the_cli_and_compiles_the_forward(env, tiny_bert_dir, monkeypatch):
    from typer.testing import CliRunner

    import embench.models.as_encoder as as_encoder
    from embench.cli import app

    seen = {}

    def capture(name, **options):
        seen.update(options)
        raise EmbenchError("captured")

    monkeypatch.setattr(as_encoder, "load_model", capture)  # where evaluate turns a model name into an encoder
    result = CliRunner().invoke(app, ["run", "-m", str(tiny_bert_dir), "-t", "STS12", "--compile", "--batch-tokens", "4096",
                                      "--cuda-graphs"])
    assert "captured" in str(result.exception) and seen["compile"] is True and seen["batch_tokens"] == 4096
    assert seen["cuda_graphs"] is True
    enc = embench.load_model(tiny_bert_dir, device="cpu", compile=True)
    assert enc.compiled and not embench.load_model(tiny_bert_dir, device="cpu").compiled
    layers = transformer_layers(enc.model)  # each layer compiled, not the whole forward (models/regional_compile.py)
    assert all(getattr(layer, "_compiled_call_impl", None) is not None for layer in layers)
    assert getattr(enc.model, "_compiled_call_impl", None) is None


@pytest.mark.slow  # over 2 s: torch.compile on the CPU
@pytest.mark.parametrize("which", ["bert", "llama", "llama-bidirectional"])
def test_a_compiled_encoder_compiles_once_for_every_layer_and_batch_shape_and_gives_the_eager_vectors(
        which, tiny_bert_dir, tiny_llama_dir):
    from torch._dynamo.utils import counters

    folder, options = (tiny_bert_dir, {}) if which == "bert" else (tiny_llama_dir, {})
    if which == "llama-bidirectional":  # BeLLM's last layer as a bidirectional branch (a hook on the layers)
        options = {"bidirectional_last": 1}
    texts = ["a man plays a guitar", "two dogs run through the deep snow of the valley", "rain", "the old cat"]
    eager = embench.load_model(folder, device="cpu", **options)
    compiled = embench.load_model(folder, device="cpu", compile=True, **options)
    torch._dynamo.reset()
    counters.clear()
    for batch in (texts, texts[:3], texts * 3):  # three batch shapes
        np.testing.assert_allclose(compiled.encode_batch(batch), eager.encode_batch(batch), rtol=1e-5, atol=1e-5)
    # one graph for both layers and all three shapes; the bidirectional branch's call of the last layer (its hooks
    # and open mask) is a second
    assert counters["stats"]["unique_graphs"] == (2 if options else 1)


@pytest.mark.slow  # sts-all tokenised: about 2 s
def test_token_budget_batches_pad_sts_all_less_than_batches_filled_in_turn(benchmark_script, data_root, minilm_path,
                                                                           monkeypatch):
    """The cut of least padding on sts-all's 26,083 texts as a GPU tokenises them (chunks of 4,096 by characters),
    batches of 65,536 tokens: all-MiniLM-L6-v2's tokenizer gives 372.6k real tokens, padded to 435k, where filling
    each batch in turn padded 574k (and the plain reference loop's one global order, filled in turn, 460k)."""
    monkeypatch.setenv("EMBENCH_DATA", str(data_root))
    texts = benchmark_script("encode_gpu").sts_all_texts()  # the texts the GPU benchmark encodes
    enc = embench.load_model(str(minilm_path), device="cpu")
    lengths = np.array([len(x) for x in enc.pretokenize(texts)["input_ids"]])
    by_chars = np.argsort(-np.fromiter(map(len, texts), dtype=np.int64), kind="stable")
    padded = {True: 0, False: 0}
    for chunk in split_chunks(by_chars, batching.GPU_FIRST_CHUNK, batching.GPU_TOKENIZE_CHUNK):
        sorted_lengths = np.sort(lengths[chunk])[::-1]
        for least in padded:
            for lo, hi in cut_batches(sorted_lengths, None, 65536, least_padding=least):
                assert (hi - lo) * sorted_lengths[lo] <= 65536
                padded[least] += (hi - lo) * int(sorted_lengths[lo])
    assert len(texts) == 26_083 and lengths.sum() == 372_650
    assert padded == {True: 434_850, False: 574_294}
