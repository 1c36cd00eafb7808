"""What ``embench analyze`` checks before it encodes, and what it leaves in its output folder: every model's
options checked before any model runs, one provenance file per analysis, no stale figures after a re-run, the
columns that tell runs apart, and kNN distances in float64."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from embench.analysis import run
from embench.core.errors import EmbenchError


@pytest.fixture(scope="module")
def deeper_bert_dir(tiny_model):
    """A random 4-layer, 4-head BERT: more layers and heads than ``tiny_bert_dir`` (2 and 2)."""
    from transformers import BertConfig, BertModel

    return tiny_model("tiny-bert-deeper", lambda vocab: BertModel(BertConfig(
        vocab_size=vocab, hidden_size=32, num_hidden_layers=4, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=512)))


def _encoded(cache) -> bool:
    return cache.exists() and any(cache.rglob("*.npy"))


# -- fault 1: layer-removal's N = 0 --------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("layers", ["0", "0,-0", "0,2", [0, 1]])
def test_layer_removal_with_n_zero_is_an_error_naming_layers(tiny_llama_dir, data_root, tmp_path, layers):
    """``--layers 0`` died with an IndexError (nothing left to encode); among other N it was dropped without a word."""
    with pytest.raises(EmbenchError, match=r"layers=0: layer-removal's N is the number of layers kept.*keeps no layer"):
        run("layer-removal", [tiny_llama_dir], tmp_path / "out", layers=layers, data=data_root, cache_dir=tmp_path / "cache")
    assert not _encoded(tmp_path / "cache")


# -- fault 2: every model's options before any model encodes -------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", ["layers", "layer-removal"])
def test_a_layer_only_the_first_model_has_is_said_before_it_encodes(name, deeper_bert_dir, tiny_bert_dir, data_root, tmp_path):
    """``layers -m DEEP -m SHALLOW --layers 3`` encoded DEEP at every layer, then failed on SHALLOW and wrote nothing."""
    with pytest.raises(EmbenchError, match=r"layers=3.*tiny-bert"):
        run(name, [deeper_bert_dir, tiny_bert_dir], tmp_path / "out", labels=["deep", "tiny-bert"], layers="0,3" if name == "layers" else "3",
            data=data_root, cache_dir=tmp_path / "cache", pooling="mean", **({"dataset": None} if name == "layers" else {}))
    assert not _encoded(tmp_path / "cache")


@pytest.mark.slow
def test_a_head_only_the_first_model_has_is_said_before_any_pass(deeper_bert_dir, tiny_bert_dir, data_root, tmp_path, monkeypatch):
    from embench.analysis import token_pass

    passes = []
    monkeypatch.setattr(token_pass, "token_pass", lambda reqs, size: passes.append(reqs))
    with pytest.raises(EmbenchError, match=r"heads=3 is out of range for tiny-bert: the model has heads 0 to 1"):
        run("attention", [deeper_bert_dir, tiny_bert_dir], tmp_path / "out", labels=["deep", "tiny-bert"], heads="3", limit=2,
            data=data_root, use_cache=False)
    assert passes == []


@pytest.mark.slow
@pytest.mark.parametrize("name", ["knn", "tsne"])
def test_k_above_the_training_points_is_said_before_any_model_encodes(name, tiny_bert_dir, data_root, tmp_path):
    with pytest.raises(EmbenchError, match=r"k=95 is larger than the 90 training points of trec"):
        run(name, [tiny_bert_dir, tiny_bert_dir], tmp_path / "out", datasets=("trec",), limit=100, k=95,
            data=data_root, cache_dir=tmp_path / "cache", pooling="mean")
    assert not _encoded(tmp_path / "cache")


# -- fault 3: a re-run removes what its previous run wrote and this one did not ------------------
@pytest.mark.slow
def test_a_rerun_with_fewer_sentences_leaves_no_stale_map_and_no_user_file_touched(tiny_bert_dir, data_root, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "attention_maps_7.png").write_text("the user's own file, named like ours")
    (out / "notes.txt").write_text("mine")
    common = dict(limit=2, data=data_root, use_cache=False, pooling="mean")
    run("attention", [tiny_bert_dir], out, sentences=("One two.", "Three four."), **common)
    assert {"attention_maps_0.png", "attention_maps_1.pdf"} <= {p.name for p in out.iterdir()}
    run("cls-energy", [tiny_bert_dir], out, **common)  # another analysis' outputs in the same folder
    result = run("attention", [tiny_bert_dir], out, sentences=("Only one.",), **common)
    names = {p.name for p in out.iterdir()}
    assert not names & {"attention_maps_0.png", "attention_maps_0.pdf", "attention_maps_1.png", "attention_maps_1.pdf"}
    assert {"attention_maps.png", "attention_maps.pdf", "attention_maps_7.png", "notes.txt", "cls_energy.csv",
            "cls_energy.png", "cls-energy.analysis.json"} <= names
    assert len(json.loads((out / "attention_maps.json").read_text())[tiny_bert_dir.name]) == 1
    listed = json.loads((out / "attention.analysis.json").read_text())["files"]
    assert sorted(listed) == sorted(p.name for p in result.files if p.name != "attention.analysis.json")


def test_only_plain_names_inside_the_folder_are_ever_removed(tmp_path):
    from types import SimpleNamespace

    from embench.analysis.base import AnalysisResult
    from embench.analysis.provenance import provenance_path, write_provenance

    out, outside = tmp_path / "out", tmp_path / "outside.png"
    (out / "sub").mkdir(parents=True)
    outside.write_text("x")
    for name in ("a.png", "b.png", "sub/c.png"):
        (out / name).write_text("x")
    provenance_path(out, "demo").write_text(json.dumps({"files": ["a.png", "b.png", "sub/c.png", "../outside.png",
                                                                  str(outside), "demo.analysis.json", 3]}))
    ctx = SimpleNamespace(root=SimpleNamespace(path=tmp_path), cache_dir=None)
    write_provenance("demo", AnalysisResult("demo", files=[out / "a.png"]), [], ctx, out, {"k": 10})
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.png")) == ["a.png"]
    assert outside.is_file() and json.loads(provenance_path(out, "demo").read_text())["files"] == ["a.png"]


# -- fault 4: what produced the outputs ----------------------------------------------------------
@pytest.mark.slow
def test_each_analysis_says_what_produced_its_outputs(tiny_bert_dir, data_root, tmp_path):
    from typer.testing import CliRunner

    from embench.cli import app

    out = tmp_path / "out"
    args = ["analyze", "layers", "-m", str(tiny_bert_dir), "--label", "tiny", "--layers", "0,2", "--dataset", "trec",
            "--limit", "100", "--max-length", "32", "--pooling", "mean", "--set", "metric=cosine", "--set", "stratify=false", "--out", str(out),
            "--data", str(data_root), "--cache-dir", str(tmp_path / "cache"), "-q"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    frame = pd.read_csv(out / "layers.csv")
    assert list(frame.columns[:9]) == ["model", "layer", "pooling", "normalized", "stsb_spearman", "knn_dataset", "knn_accuracy",
                                       "knn_stderr", "knn_n_test"]  # the columns there were, unchanged
    assert (frame["knn_k"] == 10).all() and (frame["knn_metric"] == "cosine").all() and (frame["knn_transform"] == "raw").all()
    made = json.loads((out / "layers.analysis.json").read_text())
    assert made["analysis"] == "layers" and made["embench_version"] and made["data"] == str(data_root)
    assert made["options"]["metric"] == "cosine" and made["options"]["k"] == 10 and made["options"]["limit"] == 100
    assert made["options"]["dataset"] == "trec" and made["options"]["stratify"] is False
    model = made["models"][0]
    assert model["label"] == "tiny" and model["model"] == str(tiny_bert_dir) and model["load_options"]["max_length"] == 32
    assert model["encoder"]["source"] == str(tiny_bert_dir) and model["encoder"]["max_length"] == 32
    assert model["encoder"]["fingerprint"] and "revision" in model["encoder"] and len(model["encoder"]["cache_key"]) == 24
    assert model["views"][0]["layer"] == 0 and all(v["cache_key"] for v in model["views"])  # a view: what it changes
    assert sorted(made["files"]) == ["layers.csv", "layers.pdf", "layers.png"]


def test_the_layers_figure_names_its_knn_settings(monkeypatch, tmp_path):
    from embench.analysis import layers

    seen = []
    monkeypatch.setattr(layers, "per_layer_figure", lambda frame, measures, *a, **k: seen.extend(measures) or [])
    measure = next(m for m in _layers_measures(layers, monkeypatch, tmp_path, seen) if m.column == "knn_accuracy")
    assert measure.label == "5-NN accuracy on trec, cosine, centred (%)"


def _layers_measures(layers, monkeypatch, tmp_path, seen):
    """The measures the layers analysis draws, with its models and data faked (no model runs)."""
    from types import SimpleNamespace

    texts, labels = [f"text {i}" for i in range(40)], [i % 2 for i in range(40)]
    pairs = SimpleNamespace(left=["a", "b", "c"], right=["b", "c", "a"], gold=np.array([1.0, 2.0, 3.0]))
    monkeypatch.setattr(layers, "stsb", lambda *a, **k: pairs)
    monkeypatch.setattr(layers, "load_labelled", lambda *a, **k: SimpleNamespace(name="trec", texts=texts, labels=labels))
    rng = np.random.default_rng(0)
    enc = SimpleNamespace(pooling="mean", settings=SimpleNamespace(normalize=False))
    ref = SimpleNamespace(label="m", options={}, encoder=lambda **k: SimpleNamespace(num_layers=1),
                          unnormalised=lambda **k: enc)
    ctx = SimpleNamespace(root=None, cache_dir=None, fill_views=lambda *a: None, embed=lambda e, t: rng.normal(size=(len(t), 4)), release=lambda e: None)
    layers.layers.impl([ref], ctx, tmp_path, layers="1", k=5, metric="cosine", transform="centred", dataset="trec")
    return seen


@pytest.mark.slow
def test_tsne_says_the_perplexity_it_used_and_warns_when_openTSNE_lowered_it(tiny_bert_dir, data_root, tmp_path):
    with pytest.warns(UserWarning, match=r"perplexity=200: the t-SNE maps of trec \(100 points\) use perplexity 33"):
        result = run("tsne", [tiny_bert_dir], tmp_path / "out", datasets=("trec",), limit=100, perplexity=200.0,
                     data=data_root, use_cache=False, pooling="mean")
    assert (result.tables["tsne"]["perplexity"] == 33).all() and (result.tables["tsne_knn"]["perplexity"] == 33).all()
    assert (pd.read_csv(tmp_path / "out" / "tsne_knn.csv")["perplexity"] == 33).all()
    made = json.loads((tmp_path / "out" / "tsne.analysis.json").read_text())
    assert made["options"]["perplexity"] == 200.0  # asked; the CSVs say what was used


def test_tsne_split_error_names_tsne_s_own_option(tiny_bert_dir, data_root, tmp_path):
    """tsne's split error sent its users to `embench analyze knn --set stratify=false`, which tsne refused: tsne
    now has ``stratify`` for the kNN accuracy it prints, and its error names it."""
    with pytest.raises(EmbenchError, match=r"unstratified split: `embench analyze tsne --set stratify=false`") as e:
        run("tsne", [tiny_bert_dir], tmp_path / "out", datasets=("trec",), limit=3, data=data_root, use_cache=False)
    assert "analyze knn" not in str(e.value)
    with pytest.raises(EmbenchError, match=r"k=10 is larger than the 2 training points of trec"):  # the split is made
        run("tsne", [tiny_bert_dir], tmp_path / "out", datasets=("trec",), limit=3, stratify=False, data=data_root)


@pytest.mark.slow
def test_tsne_s_knn_accuracy_takes_an_unstratified_split(tiny_bert_dir, data_root, tmp_path):
    result = run("tsne", [tiny_bert_dir], tmp_path / "out", datasets=("trec",), limit=30, k=3, stratify=False,
                 data=data_root, use_cache=False)
    assert not result.tables["tsne_knn"]["stratify"].any() and result.tables["tsne_knn"]["n_test"].tolist() == [3]


# -- fault 5: kNN distances in float64 -----------------------------------------------------------
def test_euclidean_and_cosine_knn_agree_on_unit_vectors_of_a_near_collapsed_space():
    """In float32 the neighbours of unit vectors that differ in the 4th digit were reordered by round-off, so the two
    metrics, which rank unit vectors alike, gave 0.97 and 0.33 here."""
    from embench.analysis.knn import knn_accuracy

    rng = np.random.default_rng(0)
    y = np.arange(300) % 3
    centres, offset = rng.normal(size=(3, 16)), rng.normal(size=16) * 10
    x = offset + 1e-3 * (centres[y] + rng.normal(size=(300, 16)))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    euclidean, cosine = (knn_accuracy(x, y, metric=m)["accuracy"] for m in ("euclidean", "cosine"))
    assert euclidean == cosine == pytest.approx(0.9667, abs=1e-4)
