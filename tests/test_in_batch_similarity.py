"""``analyze in-batch-similarity`` (MultiCSR Figure 8): the in-batch negatives it counts, and a real run."""

from __future__ import annotations

import numpy as np
import pytest

from embench.analysis.in_batch_similarity import negative_cosines


def test_in_batch_negatives_are_each_premise_against_the_other_examples_hypotheses():
    a = np.eye(3)
    p = np.array([[1.0, 0, 0], [0.6, 0.8, 0], [0, 0, 1.0]])
    h = np.array([[0, 1.0, 0], [1.0, 0, 0], [0, 0.8, 0.6]])
    neg, own_pos, own_hard = negative_cosines(a, p, h)
    assert len(neg) == 2 * 3 * 2  # 2N(N-1)
    assert sorted(neg.round(3)) == sorted([0.6, 0.0, 0.0, 0.0, 0.0, 0.0,   # premises vs other positives
                                          1.0, 0.0, 1.0, 0.8, 0.0, 0.0])  # premises vs other hard negatives
    assert own_pos.tolist() == [1.0, 0.8, 1.0] and own_hard.round(3).tolist() == [0.0, 0.0, 0.6]


@pytest.mark.slow
def test_the_analysis_writes_its_numbers_and_figure_with_sigma(tiny_bert_dir, data_root, tmp_path):
    from embench.analysis import run

    result = run("in-batch-similarity", [str(tiny_bert_dir)], tmp_path, data=data_root, use_cache=False, batch=8,
                 batches=2, sigma=0.5, seed=3)
    row = result.tables["in_batch_similarity"].iloc[0]
    assert row["negatives"] == 2 * 2 * 8 * 7
    hist = result.tables["in_batch_similarity_hist"]
    assert hist["count"].sum() == row["negatives"] and hist["percent"].sum() == pytest.approx(100.0)
    above = hist.loc[hist["low"] >= 0.5 - 1e-9, "count"].sum() / row["negatives"]
    assert row["share_at_or_above_sigma"] == pytest.approx(above, abs=0.02)  # bins of 0.05 start at sigma = 0.5
    assert {p.name for p in result.files} >= {"in_batch_similarity.csv", "in_batch_similarity.png"}
