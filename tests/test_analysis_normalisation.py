"""kNN, its per-layer curves and the accuracy on t-SNE maps read the cropping paper's non-normalised embeddings
(§3.3.1), also for a model whose pipeline ends in an L2 normalisation (all-MiniLM-L6-v2's does); ``--normalize``
asks for unit vectors. The vectors come from a view of the same model (the same forward pass), under their own
cache key."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from embench import load_model
from embench.analysis.knn import knn_accuracy, load_labelled
from embench.data.root import DataRoot


@pytest.fixture(scope="module")
def normalising(tiny_bert_dir):
    """The tiny BERT as a model whose own pipeline L2-normalises (as a sentence-transformers Normalize module does)."""
    return load_model(str(tiny_bert_dir), pooling="mean", normalize=True)


def test_a_view_without_the_normalisation_shares_the_pass_but_not_the_cache_key(normalising):
    texts = ["A man plays a guitar.", "Two dogs run on the beach in the sun."]
    raw = normalising.view(normalize=False)
    assert raw.pass_key() == normalising.pass_key() and raw.cache_key() != normalising.cache_key()
    unit, plain = normalising.encode_batch(texts), raw.encode_batch(texts)
    assert not np.allclose(np.linalg.norm(plain, axis=1), 1.0)
    np.testing.assert_allclose(plain / np.linalg.norm(plain, axis=1, keepdims=True), unit, atol=1e-6)
    assert normalising.view(layer=1).settings.normalize and not normalising.view(layer=1, normalize=False).settings.normalize


@pytest.mark.slow
def test_knn_reads_the_vectors_before_the_models_normalisation_unless_normalize_is_given(tmp_path, normalising, tiny_bert_dir,
                                                                                          data_root):
    from embench.analysis.knn import knn

    sets = load_labelled("trec", DataRoot(data_root), limit=200, seed=42)
    plain = load_model(str(tiny_bert_dir), pooling="mean", normalize=False).encode_batch(sets.texts)
    unit = plain / np.linalg.norm(plain, axis=1, keepdims=True)
    frame = knn([normalising], tmp_path / "a", data=data_root, use_cache=False, datasets="trec", limit=200).tables["knn"]
    assert not frame.loc[0, "normalized"]
    assert frame.loc[0, "accuracy"] == pytest.approx(knn_accuracy(plain, sets.labels)["accuracy"])
    given = knn([str(tiny_bert_dir)], tmp_path / "b", data=data_root, use_cache=False, datasets="trec", limit=200,
                pooling="mean", normalize=True).tables["knn"]
    assert given.loc[0, "normalized"]
    assert given.loc[0, "accuracy"] == pytest.approx(knn_accuracy(unit, sets.labels)["accuracy"])
    # the two readings differ on this set, or the test could not tell them apart
    assert frame.loc[0, "accuracy"] != given.loc[0, "accuracy"]


@pytest.mark.slow
def test_layers_and_tsne_say_which_vectors_they_read(tmp_path, normalising, data_root):
    from embench.analysis.layers import layers
    from embench.analysis.tsne import tsne

    frame = layers([normalising], tmp_path / "l", data=data_root, use_cache=False, layers="0,2", dataset="trec", limit=200).tables["layers"]
    assert list(frame["layer"]) == [0, 2] and not frame["normalized"].any()
    acc = tsne([normalising], tmp_path / "t", data=data_root, use_cache=False, datasets="trec", limit=150).tables["tsne_knn"]
    assert not acc["normalized"].any()
    assert isinstance(pd.read_csv(tmp_path / "t" / "tsne_knn.csv")["normalized"][0], (bool, np.bool_))
