"""The papers' protocols as defaults and options: transfer pair features, the audit's pooling knob,
kNN's train-on-train/test-on-test mode, cosine-density groups of equal counts."""

from __future__ import annotations

import numpy as np
import pytest

from embench.analysis.cosine_density import equal_count_edges, gold_bins
from embench.analysis.knn import knn_accuracy
from embench.audit.knobs import KNOBS
from embench.evaluation.protocols import EvalProtocol


def test_transfer_pair_features_default_to_senteval_code():
    assert EvalProtocol().pair_features == "senteval-code"
    assert EvalProtocol(pair_features="uv").pair_features == "uv"


def test_audit_pooling_knob_has_both_first_last_variants_and_cls_before_pooler():
    assert {"first_last_avg", "embed_last_avg", "cls_before_pooler"} <= set(KNOBS["pooling"])


def test_knn_test_mask_fits_on_the_train_rows_and_scores_the_test_rows():
    # 1-D points: train class a at 0,1,2 and class b at 10,11,12; test 1.5 (a), 10.5 (b), 5.9 (b's side: nearest 2 vs 10?)
    x = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0], [1.5], [10.5], [7.0]], dtype=np.float32)
    y = np.array(["a", "a", "a", "b", "b", "b", "a", "b", "a"])
    mask = np.array([False] * 6 + [True] * 3)
    r = knn_accuracy(x, y, k=1, test_mask=mask)
    # by hand: 1.5 -> 1 or 2 (a) right; 10.5 -> 10 or 11 (b) right; 7.0 -> 10 (b) but labelled a: wrong
    assert r["accuracy"] == pytest.approx(2 / 3) and (r["n_train"], r["n_test"]) == (6, 3)
    assert r["mode"] == "train-test" and r["stratify"] is None


def test_knn_unstratified_split_differs_from_stratified_only_in_the_split():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(60, 4)).astype(np.float32), np.array(["a"] * 50 + ["b"] * 10)
    strat, plain = knn_accuracy(x, y, k=3, stratify=True), knn_accuracy(x, y, k=3, stratify=False)
    assert strat["n_test"] == plain["n_test"] == 6 and plain["stratify"] is False and plain["mode"] == "split"


def test_equal_count_groups_split_gold_scores_at_their_quantiles():
    gold = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0])
    edges = equal_count_edges(gold, 5)
    # by hand: quantiles 0, .2, .4, .6, .8, 1 of ten values (linear interpolation) -> 0, 0.9, 1.8, 2.7, 3.6, 5
    assert edges == pytest.approx((0.0, 0.9, 1.8, 2.7, 3.6, 5.0))
    assert np.bincount(gold_bins(gold, edges)).tolist() == [2, 2, 2, 2, 2]


def test_a_record_names_only_the_axes_its_task_is_scored_under():
    """``--sick-split full`` keyed a second record of STS13 (the same number scored again), and `report` then refused the
    folder as a mix of protocols; ``--correlation pearson`` re-keyed, and re-trained, every transfer task."""
    from embench.tasks import TASKS
    from embench.tasks.recorded_protocol import task_protocol

    asked = EvalProtocol(aggregation="wmean", correlation="pearson", sick_split="full", classifier="prototyping",
                         pair_features="uv", seed=5)

    def recorded(task: str, protocol: EvalProtocol = asked) -> dict:
        return {k: v for k, v in task_protocol(TASKS.get(task), protocol).to_dict().items() if v != getattr(EvalProtocol(), k)}

    assert recorded("STS13") == {"aggregation": "wmean", "correlation": "pearson"}
    assert recorded("STSBenchmark") == {"correlation": "pearson"}
    assert recorded("SICKRelatedness") == {"correlation": "pearson", "sick_split": "full"}
    assert recorded("MRPC") == {"classifier": "prototyping", "pair_features": "uv", "seed": 5}
    assert recorded("MR") == {"classifier": "prototyping", "seed": 5}  # one sentence: no pair features
    regressor = EvalProtocol(scoring="regressor", seed=5)  # the seed trains SentEval's regressor; a SemEval year has none
    assert recorded("STSBenchmark", regressor) == {"scoring": "regressor", "seed": 5}
    assert recorded("STS12", regressor) == {}


@pytest.mark.slow
def test_a_second_run_under_an_axis_the_task_ignores_reuses_its_record(env, tiny_bert_dir, one_thread):
    import embench
    from embench.tasks.report_tables import report_tables

    first = embench.evaluate(str(tiny_bert_dir), tasks=["STS13"], progress=False)
    again = embench.evaluate(str(tiny_bert_dir), tasks=["STS13"], sick_split="full", classifier="prototyping", progress=False)
    assert again.status == {"STS13": "stored"} and again.records[0].main_score == first.records[0].main_score
    assert len(list((env / "results").rglob("STS13*.json"))) == 1
    (table,), _ = report_tables([env / "results"])  # one protocol: no mix to refuse
    assert list(table.frame.columns) == ["STS13"]
