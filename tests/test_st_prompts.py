"""``model.encode`` takes sentence-transformers' prompt arguments, in its positional order, and model objects have
``encode_query``/``encode_document``: ``encode(["x"], prompt_name="document")`` was "unexpected option", and
``encode(texts, "query")`` took "query" for the batch size (``--batch-size must be a whole number``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import embench
from embench.core.errors import EmbenchError

TEXTS = ["A man is playing a guitar.", "Two dogs run across the park {with braces}.", "hi"]
PROMPTS = {"query": "query: ", "document": "passage: "}


def copy_folder(src: Path, dst: Path) -> Path:
    """A copy of a model folder, its links left out (a link inside a folder may point at the folder itself)."""
    return Path(shutil.copytree(src, dst, ignore=lambda d, names: [n for n in names if (Path(d) / n).is_symlink()]))


def with_prompts(folder: Path, prompts: dict[str, str]) -> Path:
    """``folder`` (a sentence-transformers folder) with ``prompts`` in its config_sentence_transformers.json."""
    cfg_file = folder / "config_sentence_transformers.json"
    cfg = json.loads(cfg_file.read_text()) if cfg_file.is_file() else {}
    cfg_file.write_text(json.dumps({**cfg, "prompts": prompts}))
    return folder


def st_tiny(tiny_bert_dir: Path, dst: Path) -> Path:
    """The tiny BERT as a sentence-transformers folder (mean pooling): a plain folder's prompts are not read."""
    folder = copy_folder(tiny_bert_dir, dst)
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"embedding_dimension": 32, "pooling_mode": "mean"}))
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.base.modules.transformer.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.sentence_transformer.modules.pooling.Pooling"}]))
    return folder


@pytest.fixture(scope="module")
def prompted_minilm(tmp_path_factory, minilm_path) -> Path:
    return with_prompts(copy_folder(minilm_path, tmp_path_factory.mktemp("prompted") / "minilm"), PROMPTS)


@pytest.mark.slow  # sentence-transformers, and MiniLM loaded twice
def test_prompt_arguments_give_sentence_transformers_vectors_and_each_prompt_its_own_cache(prompted_minilm, tmp_path):
    """Every prompt argument, through one cache: a prompt served another's vectors would differ from ST's here."""
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(prompted_minilm), device="cpu")
    model = embench.load_model(prompted_minilm, device="cpu")
    cache = tmp_path / "cache"
    calls = [{}, {"prompt_name": "query"}, {"prompt_name": "document"}, {"prompt": "passage: "}, {"prompt": ""},
             {"prompt": "Represent this: ", "prompt_name": "query"}]  # the last: prompt wins, as in ST
    for _ in range(2):  # the second round is served from the cache
        for kw in calls:
            np.testing.assert_allclose(model.encode(TEXTS, cache_dir=cache, **kw), st.encode(TEXTS, **kw), atol=1e-6)
        np.testing.assert_allclose(model.encode(TEXTS, "query", cache_dir=cache), st.encode(TEXTS, "query"), atol=1e-6)
        np.testing.assert_allclose(model.encode_query(TEXTS, cache_dir=cache), st.encode_query(TEXTS), atol=1e-6)
        np.testing.assert_allclose(model.encode_document(TEXTS, cache_dir=cache), st.encode_document(TEXTS), atol=1e-6)
        np.testing.assert_allclose(model.encode_query(TEXTS, prompt="passage: ", cache_dir=cache),
                                   st.encode_query(TEXTS, prompt="passage: "), atol=1e-6)
    plain, query = model.encode(TEXTS, cache_dir=cache), model.encode(TEXTS, prompt_name="query", cache_dir=cache)
    assert np.abs(plain - query).max() > 1e-3  # the prompts change the vectors: the comparisons above mean something
    # one folder per prompt (none, query, document, "passage: " given as text, "Represent this: ")
    assert len([p for p in cache.iterdir() if p.is_dir()]) == 5


@pytest.mark.slow  # sentence-transformers
def test_a_prompt_given_as_text_leaves_pooling_as_sentence_transformers_does(tmp_path, minilm_path):
    """include_prompt: false leaves a literal prompt's tokens out of the mean too, on a folder with no prompts of its
    own (whose prompt set would have said so)."""
    from sentence_transformers import SentenceTransformer

    folder = copy_folder(minilm_path, tmp_path / "excluding")
    pooling = folder / "1_Pooling" / "config.json"
    pooling.write_text(json.dumps({**json.loads(pooling.read_text()), "include_prompt": False}))
    st = SentenceTransformer(str(folder), device="cpu")
    model = embench.load_model(folder, device="cpu")
    got = model.encode(TEXTS, prompt="query: ", use_cache=False)
    np.testing.assert_allclose(got, st.encode(TEXTS, prompt="query: "), atol=1e-6)
    kept = embench.load_model(minilm_path, device="cpu").encode(TEXTS, prompt="query: ", use_cache=False)
    assert np.abs(got - kept).max() > 1e-3  # the prompt's tokens left the mean


@pytest.mark.slow  # five encodings
def test_prompt_arguments_on_a_model_without_prompts(tiny_bert_dir):
    model = embench.load_model(tiny_bert_dir)
    plain = model.encode(TEXTS, use_cache=False)
    # sentence-transformers gives every model empty query and document prompts: the text as it is
    for call in (lambda: model.encode(TEXTS, "query", use_cache=False), lambda: model.encode_query(TEXTS, use_cache=False),
                 lambda: model.encode_document(TEXTS, prompt_name="document", use_cache=False)):
        assert np.array_equal(call(), plain)
    assert model.with_prompt(None, "") is model  # the same prompt: the same encoder, the same cache
    prefixed = model.encode(TEXTS, prompt="query: ", use_cache=False)
    np.testing.assert_allclose(prefixed, model.encode([f"query: {t}" for t in TEXTS], use_cache=False), atol=1e-6)


def test_prompt_and_argument_errors_are_in_python_spelling(tiny_bert_dir, tmp_path):
    model = embench.load_model(with_prompts(st_tiny(tiny_bert_dir, tmp_path / "m"), {"query": "q: "}))
    assert model.prompt_set is not None
    for kw, message in (({"prompt_name": "quary"}, r"prompt_name='quary' is not one of .*\. Did you mean 'query'\? "
                                                   r"Its prompts: query \(document: empty, the text as it is\)"),
                        ({"prompt_name": 3}, "prompt_name must be the name of one of the model's prompts"),
                        ({"prompt": ["q: "]}, r"prompt must be a prefix for every text \(a string\), not list"),
                        ({"batch_size": "32"}, r"^encode\(\): batch_size must be a whole number of at least 1, not str"),
                        ({"truncate_dim": 8}, r"^encode\(truncate_dim=8\) is not taken here: slice the vectors"),
                        ({"pool": {}}, r"^encode\(pool=\{\}\) is not taken here"),
                        ({"promt": "q: "}, r"unexpected option 'promt' \(did you mean 'prompt'")):
        with pytest.raises(EmbenchError, match=message):
            model.encode(TEXTS, **kw)
    with pytest.raises(EmbenchError, match="got the texts twice"):
        model.encode(TEXTS, inputs=TEXTS)


@pytest.mark.slow  # several encodings, an ensemble loaded
def test_texts_by_sentence_transformers_names_and_an_ensemble_without_prompts(tiny_bert_dir):
    model = embench.load_model(tiny_bert_dir)
    # sentence-transformers' names for the texts: inputs (6.x), sentences (earlier)
    want = model.encode(TEXTS, use_cache=False)
    assert np.array_equal(model.encode(inputs=TEXTS, use_cache=False), want)
    assert np.array_equal(model.encode(sentences=TEXTS, use_cache=False), want)
    ensemble = embench.load_model(f"ensemble:{tiny_bert_dir}+{tiny_bert_dir}")
    with pytest.raises(EmbenchError, match="takes no prompt_name or prompt here"):
        ensemble.encode(TEXTS, prompt="q: ")
    assert ensemble.encode_query(TEXTS, use_cache=False).shape == ensemble.encode(TEXTS, use_cache=False).shape
