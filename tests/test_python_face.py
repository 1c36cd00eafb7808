"""The Python face researchers expect: ``model.encode`` as sentence-transformers has it, and ``evaluate``
taking a ``SentenceTransformer`` or any object with ``encode``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import embench
from embench.core.errors import EmbenchError
from embench.models.foreign import ForeignEncoder

TEXTS = ["A man is playing a guitar.", "A woman slices an onion.", "A man is playing a guitar.", "Dogs run."]


@pytest.fixture(scope="module")
def st_model(minilm_path):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(minilm_path), device="cpu")


@pytest.mark.slow
def test_encode_matches_sentence_transformers(st_model, tmp_path):
    model = embench.load_model("all-MiniLM-L6-v2")
    ours = model.encode(TEXTS, batch_size=2, cache_dir=tmp_path)
    theirs = st_model.encode(TEXTS, batch_size=2)
    assert ours.dtype == np.float32 and ours.shape == (4, 384)
    assert np.abs(ours - theirs).max() < 1e-5
    assert model.encode(TEXTS[0], cache_dir=tmp_path).shape == (384,)  # one text, one vector, as ST
    tensor = model.encode(TEXTS, convert_to_tensor=True, show_progress_bar=False, cache_dir=tmp_path)
    assert isinstance(tensor, torch.Tensor) and torch.allclose(tensor, torch.from_numpy(ours))


def test_encode_goes_through_the_cache(tiny_bert_dir, tmp_path, monkeypatch):
    model = embench.load_model(tiny_bert_dir)
    first = model.encode(TEXTS, cache_dir=tmp_path)
    calls = []
    monkeypatch.setattr(type(model), "encode_views", lambda *a, **k: calls.append(1))
    again = model.encode(TEXTS, cache_dir=tmp_path)  # every vector from the cache: the model is not run
    assert calls == [] and np.array_equal(first, again)
    assert any(tmp_path.rglob("*.np[yz]"))  # shards written


def test_encode_normalize_and_options(tiny_bert_dir, tmp_path):
    model = embench.load_model(tiny_bert_dir)
    raw = model.encode(TEXTS, use_cache=False)
    unit = model.encode(TEXTS, normalize_embeddings=True, use_cache=False)  # sentence-transformers' spelling
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0)
    assert np.allclose(np.linalg.norm(unit, axis=1), 1.0, atol=1e-6)
    assert np.allclose(unit, raw / np.linalg.norm(raw, axis=1, keepdims=True), atol=1e-6)
    with pytest.raises(EmbenchError, match="unexpected option 'normalise'"):
        model.encode(TEXTS, normalise=True)
    with pytest.raises(EmbenchError, match=r"load_model\(device=...\)"):
        model.encode(TEXTS, device="meta")  # never the model's own (which is taken: the next test)
    with pytest.raises(EmbenchError, match=r"encode\(output_value='token_embeddings'\): encode gives sentence vectors only"):
        model.encode(TEXTS, output_value="token_embeddings")
    assert model.encode(TEXTS, output_value="sentence_embedding", use_cache=False).shape == raw.shape
    for bad, message in (([TEXTS[0], None], "text 1 is NoneType None, not a string"), ([b"abc"], "text 0 is bytes"),
                         ([["a", "man"]], r"text 0 is list \['a', 'man'\]"), ({"a": 1}, "not dict"), (3, "not int")):
        with pytest.raises(EmbenchError, match=message):
            model.encode(bad)



@pytest.mark.slow
def test_encode_takes_the_model_s_own_device_and_refuses_another(tiny_bert_dir):
    """encode(device="cpu") was refused for a model on the CPU (any device but None was), though code written for
    sentence-transformers passes the device it loaded the model on; another device is still refused."""
    model = embench.load_model(tiny_bert_dir, device="cpu")
    raw = model.encode(TEXTS, use_cache=False)
    for same in ("cpu", "cpu:0", torch.device("cpu")):
        assert np.array_equal(model.encode(TEXTS, device=same, use_cache=False), raw)
    for other in ("cuda", "cuda:1", "meta", "gpu"):
        with pytest.raises(EmbenchError, match=rf"^encode\(device={other!r}\): the device is the model's; give it to load_model"):
            model.encode(TEXTS, device=other)
    from embench.encoding.st_arguments import same_device

    current = torch.cuda.current_device() if torch.cuda.is_available() else 0  # "cuda" is the current CUDA device
    assert same_device("cuda", f"cuda:{current}") and same_device(f"cuda:{current}", "cuda")
    assert not same_device("cuda:7", "cuda:0") and not same_device("cuda", "cpu") and not same_device(None, "cpu")


def test_encode_refuses_a_normalize_that_is_not_true_or_false(tiny_bert_dir):
    """encode(normalize="no") normalised the vectors (a non-empty string is true), where evaluate(normalize="no") is
    refused; numpy's bool is taken."""
    model = embench.load_model(tiny_bert_dir, device="cpu")
    for name in ("normalize", "normalize_embeddings"):
        for bad in ("no", 1, "False"):
            with pytest.raises(EmbenchError, match=rf"^{name} must be True or False, not {type(bad).__name__} {bad!r}$"):
                model.encode(TEXTS, **{name: bad})
    raw = model.encode(TEXTS, use_cache=False)
    assert np.array_equal(model.encode(TEXTS, normalize=np.bool_(False), use_cache=False), raw)
    unit = model.encode(TEXTS, normalize_embeddings=np.bool_(True), use_cache=False)
    assert np.allclose(unit, raw / np.linalg.norm(raw, axis=1, keepdims=True), atol=1e-6)


@pytest.mark.slow
def test_encode_answers_convert_to_numpy_false_as_sentence_transformers_does(tiny_bert_dir):
    """convert_to_numpy=False was dropped silently (an ndarray came back); sentence-transformers gives a list of
    tensors, one per text (one text: its tensor), and convert_to_tensor one tensor whatever convert_to_numpy says."""
    model = embench.load_model(tiny_bert_dir)
    want = model.encode(TEXTS, use_cache=False)
    rows = model.encode(TEXTS, convert_to_numpy=False, use_cache=False)
    assert isinstance(rows, list) and len(rows) == len(TEXTS) and all(isinstance(r, torch.Tensor) for r in rows)
    assert np.array_equal(torch.stack(rows).numpy(), want)
    one = model.encode(TEXTS[1], convert_to_numpy=False, use_cache=False)
    assert isinstance(one, torch.Tensor) and one.shape == want[1].shape
    both = model.encode(TEXTS, convert_to_numpy=False, convert_to_tensor=True, use_cache=False)
    assert isinstance(both, torch.Tensor) and np.array_equal(both.numpy(), want)
    assert model.encode([], convert_to_numpy=False, use_cache=False) == []


class Counting:
    """A user's own model: anything with encode(texts) -> array (here the tiny BERT behind it)."""

    def __init__(self, inner, fingerprint=None):
        self.inner, self.calls = inner, 0
        if fingerprint:
            self.fingerprint = fingerprint

    def encode(self, texts):
        self.calls += 1
        return self.inner.encode_batch(list(texts))


@pytest.mark.slow
def test_evaluate_any_object_with_encode(tiny_bert_dir, data_root, tmp_path):
    inner = embench.load_model(tiny_bert_dir)
    direct = embench.evaluate(inner, tasks=["STS16"], data=data_root, results_dir=tmp_path / "r0", use_cache=False)
    opts = dict(tasks=["STS16"], data=data_root, results_dir=tmp_path / "r", cache_dir=tmp_path / "c")
    anon = Counting(inner)
    ev = embench.evaluate(anon, **opts)
    assert ev.frame.iloc[0, 0] == pytest.approx(direct.frame.iloc[0, 0], abs=1e-5)  # other batches: float noise
    assert ev.records[0].model == "Counting"
    calls = anon.calls
    # no fingerprint: nothing cached, and the stored record is not served again (the object may have changed)
    again = embench.evaluate(anon, **opts)
    assert again.status == {"STS16": "computed"} and anon.calls == 2 * calls
    assert not (tmp_path / "c").exists() or not any((tmp_path / "c").rglob("*.np[yz]"))
    # a fingerprint the user vouches for: cached and reused like any named model
    named = Counting(inner, fingerprint="v1")
    embench.evaluate(named, **opts)
    assert embench.evaluate(named, **opts).status == {"STS16": "stored"}


def test_foreign_encoder_errors():
    with pytest.raises(EmbenchError, match="no encode"):
        ForeignEncoder(object())

    class Wrong:
        def encode(self, texts):
            return np.zeros((len(texts) + 1, 3))

    with pytest.raises(EmbenchError, match=r"returned shape \(3, 3\) for 2 texts"):
        ForeignEncoder(Wrong()).encode_batch(["a", "b"])
    with pytest.raises(EmbenchError, match="pass fingerprint"):
        ForeignEncoder(Wrong()).cache_key()


@pytest.mark.slow
def test_evaluate_sentence_transformer_object(st_model, data_root, tmp_path, minilm_cache):
    """A SentenceTransformer passed as it is scores exactly as the same checkpoint by name."""
    by_name = embench.evaluate("all-MiniLM-L6-v2", tasks=["STS16"], data=data_root, results_dir=tmp_path / "a",
                               cache_dir=minilm_cache)
    obj = embench.evaluate(st_model, tasks=["STS16"], data=data_root, results_dir=tmp_path / "b",
                           cache_dir=tmp_path / "cache")
    assert obj.frame.iloc[0, 0] == pytest.approx(by_name.frame.iloc[0, 0], abs=1e-5)
    assert any((tmp_path / "cache").rglob("*"))  # a Module is fingerprinted from its parameters: cached


@pytest.fixture(scope="module")
def tiny_st_dir(tmp_path_factory, tiny_bert_dir):
    """The tiny BERT with mean pooling saved by the installed sentence-transformers (6 writes no max_seq_length in
    sentence_bert_config.json: the tokenizer's model_max_length, 128 here, is it)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    folder = tmp_path_factory.mktemp("tinyst")
    SentenceTransformer(modules=[Transformer(str(tiny_bert_dir), max_seq_length=128), Pooling(32, "mean")],
                        device="cpu").save(str(folder))
    return folder


@pytest.mark.slow  # imports sentence-transformers
def test_an_object_saved_by_sentence_transformers_6_is_its_folder_and_a_truncating_one_is_not(tiny_st_dir):
    """A folder saved by sentence-transformers 6 names no max_seq_length, and the object (128, its tokenizer's) was
    compared with None: it never shared `embench run -m folder`'s cache and records. An object with truncate_dim
    was read as its folder all the same, and scored 384 dimensions where its encode() gives 8."""
    from sentence_transformers import SentenceTransformer

    from embench.models.as_encoder import as_encoder

    obj = SentenceTransformer(str(tiny_st_dir), device="cpu")
    enc = as_encoder(obj, {})
    assert enc.cache_key() == embench.load_model(tiny_st_dir).cache_key() and enc.name == tiny_st_dir.name
    np.testing.assert_allclose(enc.encode_batch(TEXTS), obj.encode(TEXTS), atol=1e-5)
    truncating = SentenceTransformer(str(tiny_st_dir), device="cpu", truncate_dim=8)
    enc = as_encoder(truncating, {})
    assert isinstance(enc, ForeignEncoder) and enc.encode_batch(TEXTS).shape == (4, 8)
    np.testing.assert_allclose(enc.encode_batch(TEXTS), truncating.encode(TEXTS), atol=1e-6)


@pytest.mark.slow  # imports sentence-transformers
def test_an_object_s_truncation_and_prompts_are_in_its_key_and_a_prompt_not_its_folder_s_is_not_its_folder(
        tiny_st_dir, tmp_path):
    """SentenceTransformer(f), (f, truncate_dim=8) and (f, prompts=..., default_prompt_name=...) had one cache key
    (none of these is in the parameters or the print): the prompted one was served the plain one's vectors. An
    object whose default prompt is its folder's is that folder; one whose default prompt is not, is not."""
    import json
    import shutil

    from sentence_transformers import SentenceTransformer

    from embench.models.as_encoder import as_encoder

    query = {"prompts": {"query": "query: "}, "default_prompt_name": "query"}
    objects = [SentenceTransformer(str(tiny_st_dir), device="cpu", **kw) for kw in ({}, {"truncate_dim": 8}, query)]
    assert len({ForeignEncoder(o).cache_key() for o in objects}) == 3
    for o in objects[1:]:
        assert isinstance(as_encoder(o, {}), ForeignEncoder)  # not what the folder holds
    prompted = tmp_path / "prompted"
    shutil.copytree(tiny_st_dir, prompted)
    cfg = json.loads((prompted / "config_sentence_transformers.json").read_text())
    (prompted / "config_sentence_transformers.json").write_text(json.dumps({**cfg, **query}))
    own = SentenceTransformer(str(prompted), device="cpu")
    enc = as_encoder(own, {})
    assert enc.cache_key() == embench.load_model(prompted).cache_key()  # the folder's prompt: the folder
    np.testing.assert_allclose(enc.encode_batch(TEXTS), own.encode(TEXTS), atol=1e-5)
    own.default_prompt_name = None
    assert isinstance(as_encoder(own, {}), ForeignEncoder)


@pytest.mark.slow  # imports sentence-transformers
def test_an_object_s_maximum_length_and_lower_casing_are_in_its_key(tiny_st_dir, tmp_path):
    """sentence-transformers 6 prints neither max_seq_length nor do_lower_case, and the key hashed the print: an object
    set to 16 tokens and then to 8 kept one key, and `evaluate` served the 16-token vectors for the 8-token model."""
    from sentence_transformers import SentenceTransformer

    obj = SentenceTransformer(str(tiny_st_dir), device="cpu")
    long_text = ["word " * 40 + "end", "another " * 30 + "end"]
    keys, vectors = set(), []
    for length, lower in ((16, False), (8, False), (8, True)):
        obj.max_seq_length, obj[0].do_lower_case = length, lower
        enc = ForeignEncoder(obj)
        keys.add(enc.cache_key())
        vectors.append(enc.encode_batch(long_text))
    assert len(keys) == 3
    assert not np.allclose(vectors[0], vectors[1])  # the lengths give other vectors: one key would serve the wrong ones


def test_encode_batch_names_an_item_that_is_not_a_string_as_encode_does(tiny_bert_dir):
    """encode_batch([1, 2]) raised the tokenizers library's TypeError (TextEncodeInput must be Union[...])."""
    model = embench.load_model(tiny_bert_dir)
    for enc in (model, embench.load_model(f"ensemble:{tiny_bert_dir}+{tiny_bert_dir}")):
        for bad, message in (([1, 2], "text 0 is int 1, not a string"), ([TEXTS[0], b"x"], "text 1 is bytes b'x'"),
                             ({"a": 1}, "takes a text or a list of texts, not dict")):
            with pytest.raises(EmbenchError, match=rf"^encode_batch\(\):? {message}"):
                enc.encode_batch(bad)
    assert model.encode_batch(TEXTS[0]).shape == (1, 32)  # one text is a batch of one
