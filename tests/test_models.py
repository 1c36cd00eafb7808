"""Loading checkpoints and pooling: each pooler equals its definition on the model's hidden states."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import embench
from embench.core.errors import EmbenchError, ModelLoadError, UnknownNameError

TEXTS = ["A man is playing a guitar.", "Short.", "The quick brown fox jumps over the lazy dog near the river bank."]


@pytest.fixture(scope="module")
def hidden(tiny_bert_dir):
    """Reference hidden states of the tiny model, computed with transformers directly."""
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    model = AutoModel.from_pretrained(tiny_bert_dir).eval()
    enc = tok(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True)
    mask = enc["attention_mask"].unsqueeze(-1).float()
    return out, mask, enc


def _mean(states, mask):
    return ((states * mask).sum(1) / mask.sum(1)).numpy()


def _encode(tiny_bert_dir, **kw):
    return embench.load_model(tiny_bert_dir, device="cpu", **kw).encode_batch(TEXTS)


def test_cls_goes_through_the_pooler_head(tiny_bert_dir, hidden):
    out, _, _ = hidden
    np.testing.assert_allclose(_encode(tiny_bert_dir, pooling="cls"), out.pooler_output.numpy(), atol=1e-6)
    np.testing.assert_allclose(
        _encode(tiny_bert_dir, pooling="cls_before_pooler"), out.last_hidden_state[:, 0].numpy(), atol=1e-6
    )


def test_mean_and_max_use_only_real_tokens(tiny_bert_dir, hidden):
    out, mask, _ = hidden
    np.testing.assert_allclose(_encode(tiny_bert_dir, pooling="mean"), _mean(out.last_hidden_state, mask), atol=1e-6)
    masked = out.last_hidden_state.masked_fill(mask == 0, -1e9)
    np.testing.assert_allclose(_encode(tiny_bert_dir, pooling="max"), masked.max(1).values.numpy(), atol=1e-6)


def test_first_last_variants_are_named_apart(tiny_bert_dir, hidden):
    out, mask, _ = hidden
    hs = out.hidden_states
    simcse = _encode(tiny_bert_dir, pooling="first_last_avg")  # SimCSE: layer 1 + last
    whitening = _encode(tiny_bert_dir, pooling="embed_last_avg")  # BERT-whitening: embeddings + last
    np.testing.assert_allclose(simcse, _mean((hs[1] + hs[-1]) / 2, mask), atol=1e-6)
    np.testing.assert_allclose(whitening, _mean((hs[0] + hs[-1]) / 2, mask), atol=1e-6)
    assert np.abs(simcse - whitening).max() > 1e-3


@pytest.mark.parametrize("layer", [0, 1, 2, -1])
def test_layer_pools_any_hidden_layer(tiny_bert_dir, hidden, layer):
    out, mask, _ = hidden
    np.testing.assert_allclose(
        _encode(tiny_bert_dir, pooling="mean", layer=layer), _mean(out.hidden_states[layer], mask), atol=1e-6
    )


def test_last_token_with_right_and_left_padding(tiny_bert_dir, hidden):
    out, _, enc = hidden
    lengths = enc["attention_mask"].sum(1) - 1
    expected = out.last_hidden_state[torch.arange(len(TEXTS)), lengths].numpy()
    np.testing.assert_allclose(_encode(tiny_bert_dir, pooling="last_token"), expected, atol=1e-6)
    # Left padding (decoder LLMs): the last real token is the last position of every row.
    from embench.models.pooling import PoolInput, pool_last_token

    states = torch.arange(2 * 4 * 3, dtype=torch.float32).reshape(2, 4, 3)
    left = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])
    right = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    pick = lambda mask: pool_last_token(PoolInput((states,), mask, 0, None))  # noqa: E731
    assert torch.equal(pick(left), states[:, 3])
    assert torch.equal(pick(right), torch.stack([states[0, 1], states[1, 3]]))


def test_layer_out_of_range_names_the_range(tiny_bert_dir):
    with pytest.raises(EmbenchError, match=r"^layer=5 .* layers 0 \(embedding output\) to 2"):
        embench.load_model(tiny_bert_dir, layer=5)


def test_unknown_pooler_suggests_nearest(tiny_bert_dir):
    with pytest.raises(UnknownNameError, match="Did you mean 'mean'"):
        embench.load_model(tiny_bert_dir, pooling="meen")


def test_unknown_model_lists_what_was_tried(tmp_path):
    with pytest.raises(ModelLoadError) as e:
        embench.load_model(str(tmp_path / "no-such-model"))
    msg = str(e.value)
    assert "alias" in msg and "does not exist" in msg and "no-such-model" in msg
    with pytest.raises(ModelLoadError, match="hub id 'someone/not-a-model'.*HF_HUB_OFFLINE"):
        embench.load_model("someone/not-a-model")


def test_folder_without_weights_is_a_clear_error(tmp_path, tiny_bert_dir):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "config.json").write_text((tiny_bert_dir / "config.json").read_text())
    for f in tiny_bert_dir.iterdir():
        if f.name.startswith(("tokenizer", "vocab", "special")):
            (folder / f.name).write_bytes(f.read_bytes())
    enc = embench.load_model(folder)  # config and tokenizer are fine: weights are read on first use
    with pytest.raises(ModelLoadError, match="weights from"):
        enc.encode_batch(["x"])


def test_folder_without_a_tokenizer_is_an_error_not_an_empty_vocabulary(tmp_path, tiny_bert_dir):
    """transformers would build a tokenizer from the config alone, every word [UNK]: a score, but a wrong one."""
    folder = tmp_path / "no-tokenizer"
    folder.mkdir()
    for f in tiny_bert_dir.iterdir():
        if not f.name.startswith(("tokenizer", "vocab", "special")):
            (folder / f.name).write_bytes(f.read_bytes())
    with pytest.raises(EmbenchError, match=r"no-tokenizer has no tokenizer \(none of tokenizer.json, .*save it with the model"):
        embench.load_model(folder)


def test_alias_resolves_to_the_offline_package(minilm_path):
    enc = embench.load_model("all-MiniLM-L6-v2")
    assert enc.source == str(minilm_path)
    # sentence-transformers folder: its own pooling, normalisation and maximum length.
    assert (enc.pooling, enc.settings.normalize, enc.settings.max_length) == ("mean", True, 256)
    assert not enc.loaded  # nothing read but config, tokenizer and fingerprint yet


def test_sentence_transformers_folder_with_cls_pooling(tmp_path, tiny_bert_dir, hidden):
    folder = tmp_path / "st"
    (folder / "1_Pooling").mkdir(parents=True)
    for f in tiny_bert_dir.iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]))
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64, "do_lower_case": False}))
    enc = embench.load_model(folder, device="cpu")
    assert enc.pooling == "cls_before_pooler" and enc.settings.max_length == 64
    out, _, _ = hidden
    np.testing.assert_allclose(enc.encode_batch(TEXTS), out.last_hidden_state[:, 0].numpy(), atol=1e-6)


@pytest.mark.parametrize("weights_name", ["model.safetensors", "pytorch_model.bin"])
@pytest.mark.slow  # over 1 s: the fast tier stays under a minute
def test_sentence_transformers_dense_modules_match_sentence_transformers(tmp_path, tiny_bert_dir, weights_name):
    """Pooling -> Dense(tanh) -> Dense(identity) -> Normalize, saved by sentence-transformers itself."""
    from sentence_transformers import SentenceTransformer, models

    torch.manual_seed(1)
    word = models.Transformer(str(tiny_bert_dir), max_seq_length=64)
    modules = [word, models.Pooling(32, pooling_mode="cls"), models.Dense(32, 24, activation_function=torch.nn.Tanh()),
               models.Dense(24, 16, bias=False, activation_function=torch.nn.Identity()), models.Normalize()]
    st = SentenceTransformer(modules=modules, device="cpu")
    folder = tmp_path / "st-dense"
    st.save(str(folder), safe_serialization=weights_name == "model.safetensors")
    assert (folder / "2_Dense" / weights_name).is_file()
    enc = embench.load_model(folder, device="cpu")
    got = enc.encode_batch(TEXTS)
    assert got.shape == (3, 16) and enc.dense_modules == ["2_Dense", "3_Dense"]
    np.testing.assert_allclose(got, st.encode(TEXTS, convert_to_numpy=True), atol=1e-5)
    # the Dense weights are part of the fingerprint and of the cache key
    plain = embench.load_model(tiny_bert_dir, device="cpu", pooling="cls_before_pooler", max_length=64)
    assert enc.fingerprint != plain.fingerprint
    (folder / "3_Dense" / "config.json").write_text(json.dumps({"in_features": 24, "out_features": 16, "bias": False,
                                                                "activation_function": "os.system"}))
    with pytest.raises(EmbenchError, match="is not a torch.nn module"):
        embench.load_model(folder, device="cpu").encode_batch(TEXTS)


def test_fingerprint_identifies_weights(tiny_bert_dir, tmp_path):
    from transformers import AutoModel, AutoTokenizer

    a = embench.load_model(tiny_bert_dir)
    b = embench.load_model(tiny_bert_dir)
    assert a.fingerprint == b.fingerprint
    model = AutoModel.from_pretrained(tiny_bert_dir)
    with torch.no_grad():
        model.embeddings.word_embeddings.weight[0, 0] += 1.0
    model.save_pretrained(tmp_path / "changed")
    AutoTokenizer.from_pretrained(tiny_bert_dir).save_pretrained(tmp_path / "changed")
    assert embench.load_model(tmp_path / "changed").fingerprint != a.fingerprint
    in_memory = embench.load_model(model, tokenizer=AutoTokenizer.from_pretrained(tiny_bert_dir), pooling="mean")
    assert in_memory.fingerprint != a.fingerprint and in_memory.source == "in-memory module"


@pytest.mark.slow
def test_fingerprint_covers_the_tokenizer_files(tiny_bert_dir, tmp_path):
    """A tokenizer edited in place gives other vectors: the fingerprint, and so the cache key, must change with it
    (before, only the config and the weights were hashed, and the old vectors were served)."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(tiny_bert_dir, copy)
    a, moved = embench.load_model(tiny_bert_dir), embench.load_model(copy)
    assert moved.fingerprint == a.fingerprint and moved.cache_key() == a.cache_key()  # a moved copy: the same model
    before = a.encode_batch(["The SHINY Cat"])
    config = json.loads((copy / "tokenizer_config.json").read_text())
    (copy / "tokenizer_config.json").write_text(json.dumps({**config, "do_lower_case": not config.get("do_lower_case", True)}))
    edited = embench.load_model(copy)
    assert not np.allclose(edited.encode_batch(["The SHINY Cat"]), before)  # other tokens, other vectors ...
    assert edited.fingerprint != a.fingerprint and edited.cache_key() != a.cache_key()  # ... under another key
    # a tokenizer given as an object is not the folder's: the weights alone name the model
    from transformers import AutoTokenizer

    given = embench.load_model(copy, tokenizer=AutoTokenizer.from_pretrained(tiny_bert_dir))
    assert given.fingerprint not in (a.fingerprint, edited.fingerprint)


def test_a_weight_file_rewritten_with_its_old_size_and_mtime_is_fingerprinted_again(tmp_path):
    """The fingerprint was memoised on (path, size, mtime): new bytes of the same size with the modification time set
    back (os.utime) kept the old fingerprint, hence the old vectors and records, for the rest of the process."""
    import os
    import time

    from embench.models.fingerprints import fingerprint_files, stat_files

    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"a" * 64)
    before, st = fingerprint_files(stat_files(weights)), weights.stat()
    time.sleep(0.02)  # past the file system's timestamp granularity (a jiffy)
    weights.write_bytes(b"b" * 64)
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert weights.stat().st_mtime_ns == st.st_mtime_ns and fingerprint_files(stat_files(weights)) != before


def test_cache_key_changes_with_every_encoding_setting(tiny_bert_dir):
    keys = {
        embench.load_model(tiny_bert_dir, **kw).cache_key()
        for kw in ({}, {"pooling": "mean"}, {"layer": 1}, {"max_length": 32}, {"dtype": "bf16"}, {"normalize": True})
    }
    assert len(keys) == 6


def test_bf16_autocast_stays_close_to_fp32(tiny_bert_dir):
    fp32 = _encode(tiny_bert_dir, pooling="mean")
    bf16 = _encode(tiny_bert_dir, pooling="mean", dtype="bf16")
    assert bf16.dtype == np.float32
    cos = (fp32 * bf16).sum(1) / np.linalg.norm(fp32, axis=1) / np.linalg.norm(bf16, axis=1)
    assert cos.min() > 0.99 and np.abs(fp32 - bf16).max() > 0


@pytest.mark.slow
def test_an_in_memory_module_s_fingerprint_follows_its_weights_changed_in_place(tiny_bert_dir, tmp_path, monkeypatch):
    """load_model(module) fingerprinted the weights once, at load: after an in-place change its old vectors came back
    from the cache and its old records from the results, as a SentenceTransformer object's (fingerprinted again on
    every evaluate) did not. The weights are hashed again only after a write, not on every read of the fingerprint."""
    from transformers import AutoModel, AutoTokenizer

    import embench.models.live_fingerprint as live

    model, tok = AutoModel.from_pretrained(tiny_bert_dir), AutoTokenizer.from_pretrained(tiny_bert_dir)
    enc = embench.load_model(model, tokenizer=tok, pooling="mean")
    view = enc.view(layer=1)
    before, key, fingerprint = enc.encode(TEXTS, cache_dir=tmp_path), enc.cache_key(), enc.fingerprint
    hashed = []
    real = live.module_fingerprint
    monkeypatch.setattr(live, "module_fingerprint", lambda *a: hashed.append(1) or real(*a))
    assert (enc.fingerprint, view.fingerprint, enc.cache_key()) == (fingerprint, fingerprint, key) and not hashed
    with torch.no_grad():
        for p in model.encoder.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    assert enc.fingerprint != fingerprint and enc.cache_key() != key and len(hashed) == 1
    assert view.fingerprint == enc.fingerprint == enc.describe()["fingerprint"] and view.pass_key() == enc.pass_key()
    after = enc.encode(TEXTS, cache_dir=tmp_path)
    fresh = embench.load_model(model, tokenizer=tok, pooling="mean").encode(TEXTS, use_cache=False)
    assert not np.allclose(after, before) and np.allclose(after, fresh, atol=1e-6)
    assert len(hashed) == 2  # the fresh load's own; reading it again hashed nothing more
    # a fingerprint the caller names (the trainer's "training-step-N") stays as given
    assert embench.load_model(model, tokenizer=tok, fingerprint="mine").fingerprint == "mine"


def test_a_max_length_with_no_room_for_a_token_besides_the_special_tokens_is_refused_at_load(tiny_bert_dir):
    """BERT's tokenizer adds [CLS] and [SEP]: it truncates nothing below 2 (--max-length 1 encoded every text whole,
    recorded as max_length 1), and at 2 every text is [CLS][SEP]. The least that holds a word is 3."""
    for bad in (1, 2):
        with pytest.raises(EmbenchError, match=rf"^max_length={bad} holds no text: .* 2 special token.* at least 3$"):
            embench.load_model(tiny_bert_dir, max_length=bad)
    ids = embench.load_model(tiny_bert_dir, max_length=3).pretokenize(TEXTS)["input_ids"]
    assert {len(row) for row in ids} == {3}


@pytest.fixture()
def pooler_named(monkeypatch):
    """``pooler_named(name, function)``: as ``POOLERS.add`` registers it, for this test only."""
    from embench.models.poolers import POOLERS

    def add(name, function):
        monkeypatch.setitem(POOLERS._items, name, function)
        monkeypatch.setitem(POOLERS._lower, name.lower(), name)

    return add


@pytest.mark.slow
def test_a_pooler_from_outside_gets_every_layer_unless_it_declares_the_chosen_layer_alone(tiny_bert_dir, pooler_named):
    """A pooler other than first_last_avg and embed_last_avg got None for every layer but the last (an AttributeError);
    PoolInput.hidden_states is documented as every layer's. One that says it reads the chosen layer alone and reads
    another is one error naming it."""
    from embench.models.poolers import needs_all_layers
    from embench.models.pooling import chosen_layer_only, masked_mean

    pooler_named("embedding-mean", lambda x: masked_mean(x.hidden_states[0], x.attention_mask))
    pooler_named("says-chosen-only", chosen_layer_only(lambda x: masked_mean(x.hidden_states[0], x.attention_mask)))
    got = embench.load_model(tiny_bert_dir, pooling="embedding-mean").encode_batch(TEXTS)
    np.testing.assert_allclose(got, embench.load_model(tiny_bert_dir, pooling="mean", layer=0).encode_batch(TEXTS), atol=1e-6)
    with pytest.raises(EmbenchError, match=r"^pooler 'says-chosen-only' read a layer it was not given \(AttributeError.*"
                                           r"so the model gave layer 2 only"):
        embench.load_model(tiny_bert_dir, pooling="says-chosen-only").encode_batch(TEXTS)
    assert [needs_all_layers(p) for p in ("mean", "cls", "last_token", "first_last_avg", "embed_last_avg")] == [
        False, False, False, True, True]
