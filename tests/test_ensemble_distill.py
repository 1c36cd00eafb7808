"""Ensembles as one model (``ensemble:A+B``, weighted, twin folders) and distillation from one."""

from __future__ import annotations

import numpy as np
import pytest

from embench import load_model
from embench.core.errors import EmbenchError
from embench.models.ensemble import EnsembleEncoder, parse_spec

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = ["A man plays a guitar.", "Two dogs run in a field.", "The cat sleeps.", "Stocks fell sharply today."]


@pytest.fixture(scope="module")
def other_dir(tmp_path_factory, tiny_bert_dir):
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    folder = tmp_path_factory.mktemp("other")
    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    torch.manual_seed(5)
    BertModel(BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                         intermediate_size=48, max_position_embeddings=64)).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_spec_weights_one_per_member_or_none():
    assert parse_spec("ensemble:A+B") == [(1.0, "A"), (1.0, "B")]
    assert parse_spec("ensemble:0.3*A+0.7*runs/x/best") == [(0.3, "A"), (0.7, "runs/x/best")]
    with pytest.raises(EmbenchError, match=r"1 weight\(s\) for 3 members.*no weight: B, C"):
        parse_spec("ensemble:0.3*A+B+C")
    with pytest.raises(EmbenchError, match="two or more members"):
        parse_spec("ensemble:A")


def test_spec_exponent_weights_and_member_paths_with_a_plus(tmp_path, monkeypatch):
    # '1e+0' was cut at its '+': "2 weight(s) for 3 members (no weight: 1e)"
    assert parse_spec("ensemble:1e+0*A+1*B") == [(1.0, "A"), (1.0, "B")]
    assert parse_spec("ensemble:1.5E+2*A+2e-1*B") == [(150.0, "A"), (0.2, "B")]
    (tmp_path / "a+b").mkdir()  # an existing path with a '+' is one member
    monkeypatch.chdir(tmp_path)
    assert parse_spec("ensemble:a+b+C") == [(1.0, "a+b"), (1.0, "C")]
    assert parse_spec("ensemble:0.3*a+b+0.7*C") == [(0.3, "a+b"), (0.7, "C")]


@pytest.mark.slow
def test_normalize_makes_the_ensembles_sum_unit_length_and_changes_its_key(tiny_bert_dir, other_dir, tmp_path):
    a = load_model(tiny_bert_dir, device="cpu").encode_batch(TEXTS)
    b = load_model(other_dir, device="cpu").encode_batch(TEXTS)
    spec = f"ensemble:{tiny_bert_dir}+{other_dir}"
    plain, unit = load_model(spec, device="cpu"), load_model(spec, device="cpu", normalize=True)
    total = a + b
    np.testing.assert_allclose(unit.encode_batch(TEXTS), total / np.linalg.norm(total, axis=1, keepdims=True), atol=1e-5)
    assert unit.describe()["normalize"] is True and plain.describe()["normalize"] is False
    assert [m.describe()["normalize"] for m in unit.members] == [False, False]  # the sum's, not each member's
    assert unit.cache_key() != plain.cache_key()
    import json

    folder = tmp_path / "ens"  # a manifest's member keeps its own normalize: unit length before the sum
    folder.mkdir()
    (folder / "ensemble.json").write_text(json.dumps({"members": [
        {"model": str(tiny_bert_dir), "normalize": True}, {"model": str(other_dir)}]}))
    np.testing.assert_allclose(load_model(folder, device="cpu").encode_batch(TEXTS),
                               a / np.linalg.norm(a, axis=1, keepdims=True) + b, atol=1e-5)


@pytest.mark.slow
def test_weighted_ensemble_is_the_weighted_sum_of_members_with_their_own_poolings(tiny_bert_dir, other_dir, tmp_path):
    import json

    a = load_model(tiny_bert_dir, pooling="mean", device="cpu").encode_batch(TEXTS)
    b = load_model(other_dir, device="cpu").encode_batch(TEXTS)  # cls, a different depth and head count
    folder = tmp_path / "ens"
    folder.mkdir()
    (folder / "ensemble.json").write_text(json.dumps({"members": [
        {"model": str(tiny_bert_dir), "weight": 0.3, "pooling": "mean"}, {"model": str(other_dir), "weight": 0.7}]}))
    ens = load_model(folder, device="cpu")
    assert isinstance(ens, EnsembleEncoder) and [m.pooling for m in ens.members] == ["mean", "cls"]
    np.testing.assert_allclose(ens.encode_batch(TEXTS), 0.3 * a + 0.7 * b, atol=1e-5)
    spec = load_model(f"ensemble:0.3*{tiny_bert_dir}+0.7*{other_dir}", device="cpu")
    np.testing.assert_allclose(spec.encode_batch(TEXTS), 0.3 * load_model(tiny_bert_dir, device="cpu").encode_batch(TEXTS)
                               + 0.7 * b, atol=1e-5)
    assert spec.cache_key() != load_model(f"ensemble:0.5*{tiny_bert_dir}+0.5*{other_dir}", device="cpu").cache_key()
    assert spec.encode([]).shape == spec.encode_batch([]).shape == (0, b.shape[1])  # encode([]) was (0, 0)


@pytest.mark.slow
def test_members_of_different_sizes_are_an_error_naming_them(tiny_bert_dir, minilm_path):
    ens = load_model(f"ensemble:{tiny_bert_dir}+{minilm_path}", device="cpu")
    with pytest.raises(EmbenchError, match="different sizes.*32.*384"):
        ens.encode_batch(TEXTS[:1])


@pytest.mark.slow
def test_each_member_is_encoded_once_through_the_engine_cache(tiny_bert_dir, other_dir, env, monkeypatch):
    from embench import evaluate
    from embench.models.encoder import HFEncoder

    spec = f"ensemble:{tiny_bert_dir}+{other_dir}"
    evaluate(spec, tasks=["SICKRelatedness"], device="cpu", save=False)

    def no_encoding(self, texts):
        raise AssertionError(f"{self.name} encoded again")

    monkeypatch.setattr(HFEncoder, "encode_batch", no_encoding)
    # each member alone, and the members in another ensemble, read the cache the first run filled
    for model in (str(tiny_bert_dir), str(other_dir), f"ensemble:2*{tiny_bert_dir}+1*{other_dir}"):
        ev = evaluate(model, tasks=["SICKRelatedness"], device="cpu", save=False)
        assert ev.records[0].main_score == ev.records[0].main_score  # a finite score, from cached vectors


@pytest.mark.slow
def test_distillation_matches_mse_and_reads_the_teacher_once(tiny_bert_dir, other_dir, data_root, tmp_path, monkeypatch):
    import random

    import torch

    from embench.models.encoder import HFEncoder
    from embench.train import METHODS, make_config, resolve
    from embench.train.distributed import DistInfo

    monkeypatch.setenv("EMBENCH_CACHE", str(tmp_path / "cache"))
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS * 2) + "\n")
    cfg = resolve(make_config(method="distill", model=str(tiny_bert_dir), teacher=f"ensemble:{tiny_bert_dir}+{other_dir}",
                              data=[str(corpus)], data_root=str(data_root), device="cpu", max_length=16))
    method = METHODS.get("distill")(cfg)
    examples = method.examples(None)
    a = load_model(tiny_bert_dir, device="cpu").encode_batch(TEXTS)
    b = load_model(other_dir, device="cpu").encode_batch(TEXTS)
    np.testing.assert_allclose(examples.vectors[:4].numpy(), a + b, atol=1e-5)
    student = method.build("cpu").eval()
    batch = method.batch(examples, [0, 1, 2], random.Random(0))
    loss, _ = method.loss(student, batch, DistInfo())
    with torch.no_grad():
        z = student(TEXTS[:3])
    hand = float(((z - torch.from_numpy(a[:3] + b[:3])) ** 2).mean())
    assert float(loss.detach()) == pytest.approx(hand, rel=1e-5)
    monkeypatch.setattr(HFEncoder, "encode_batch", lambda self, t: (_ for _ in ()).throw(AssertionError("encoded again")))
    again = method.examples(None)  # a second run reads the teacher's vectors back from the cache
    assert torch.equal(again.vectors, examples.vectors)


def test_distill_without_a_teacher_says_how_to_give_one(tiny_bert_dir, tmp_path):
    from embench.train import METHODS, make_config, resolve

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS) + "\n")
    method = METHODS.get("distill")(resolve(make_config(method="distill", model=str(tiny_bert_dir), data=[str(corpus)])))
    with pytest.raises(EmbenchError, match="needs --teacher"):
        method.examples(None)
