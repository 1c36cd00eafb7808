"""`embench results show`: one row per model and identity of its records. Records that differ in any setting of
their identity (a prompt, the normalisation, the layer, a truncation) are separate rows with that setting as a
column, never one row whose score depends on which file was read last; a setting a record's kind of task does not
have (a transfer task has no STS aggregation) still joins the model's one row."""

from __future__ import annotations

import math

from embench.cli.commands.results import results_frame
from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.results import Record

ENCODER = {"fingerprint": "f1", "pooling": "mean", "layer": None, "max_length": None, "dtype": "fp32", "normalize": True,
           "lowercase": False, "prompt": ""}


def rec(task: str, score: float, kind: str = "sts", **encoder) -> Record:
    return Record(task=task, display=task, kind=kind, model="m", main_score=score, scores={},
                  protocol=EvalProtocol().to_dict(), encoder={**ENCODER, **encoder})


def _rows(frame, column):
    return {row[column]: row["STS12"] for _, row in frame.iterrows()}


def test_a_prompt_splits_rows_and_no_prompt_reads_none():
    frame, note, _ = results_frame([rec("STS12", 0.29), rec("STS12", 0.27, prompt="Q: {text}")])
    assert _rows(frame, "prompt") == {"none": 0.29, "Q: {text}": 0.27}
    assert "prompt" not in (note or "")


def test_normalised_and_not_are_two_rows():
    frame, note, _ = results_frame([rec("STS12", 0.29), rec("STS12", -0.01, normalize=False)])
    assert _rows(frame, "normalize") == {True: 0.29, False: -0.01}


def test_the_last_layer_and_a_chosen_layer_are_two_rows():
    frame, _, _ = results_frame([rec("STS12", 0.8), rec("STS12", 0.5, layer=3)])
    assert _rows(frame, "layer") == {"last": 0.8, 3: 0.5}


def test_a_truncation_splits_rows_and_the_full_vectors_read_full():
    frame, _, _ = results_frame([rec("STS12", 0.8), rec("STS12", 0.7, truncate_dim=64)])
    assert _rows(frame, "truncate_dim") == {"full": 0.8, 64: 0.7}


def test_unquantised_vectors_read_as_encoded_not_as_float32():
    """--quantize float32 normalises the vectors (its scores differ in the fifth decimal): not the unquantised row."""
    frame, _, _ = results_frame([rec("STS12", 0.72367), rec("STS12", 0.72371, quantize="float32")])
    assert _rows(frame, "quantize") == {"as encoded": 0.72367, "float32": 0.72371}


def test_one_setting_for_everything_is_one_row_and_said_once():
    frame, note, shared = results_frame([rec("STS12", 0.8), rec("STS13", 0.7), rec("MR", 0.75, kind="transfer")])
    assert len(frame) == 1 and list(frame.columns[:1]) == ["model"]
    assert math.isclose(frame.loc[0, "STS12"], 0.8) and math.isclose(frame.loc[0, "MR"], 0.75)
    assert shared["normalize"] is True and "normalize=True" in note and "layer=last" in note


def test_an_older_record_without_a_field_joins_the_row_it_does_not_contradict():
    old = rec("STS13", 0.7)
    del old.encoder["normalize"]
    frame, _, _ = results_frame([rec("STS12", 0.8), old])
    assert len(frame) == 1 and math.isclose(frame.loc[0, "STS13"], 0.7)


def test_report_tables_tell_the_same_settings_apart_and_name_an_unset_one():
    from embench.report.paper import paper_tables

    recs = [rec("STS12", 0.29), rec("STS12", 0.27, prompt="Q: {text}"), rec("STS12", 0.25, truncate_dim=64)]
    frame = paper_tables(recs)[0].frame
    assert sorted(frame.index) == sorted(["m (prompt=none, truncate_dim=full)", "m (prompt=Q: {text}, truncate_dim=full)",
                                          "m (prompt=none, truncate_dim=64)"])


def test_a_model_s_prompts_and_its_excluded_prompt_tokens_split_rows_in_both_tables():
    """A record of a model with prompts holds them as a dict: `report` failed on any such record and `results show` on
    two whose prompts differ (TypeError: unhashable type: 'dict'). include_prompt=False's excluded tokens, now part of
    the identity, split rows as the prompt does."""
    from embench.report.paper import paper_tables

    query = {"query": "query: "}
    frame, _, _ = results_frame([rec("STS12", 0.3, prompts=query), rec("STS12", 0.4, prompts={"query": "q: "})])
    assert _rows(frame, "prompts") == {'{"query": "query: "}': 0.3, '{"query": "q: "}': 0.4}
    recs = [rec("STS12", 0.8218, prompts=query), rec("STS12", 0.8255, prompts=query, prompt_tokens_excluded=3)]
    assert _rows(results_frame(recs)[0], "prompt_tokens_excluded") == {0: 0.8218, 3: 0.8255}
    assert paper_tables(recs)[0].frame["STS12"].to_dict() == {"m (prompt_tokens_excluded=0)": 0.8218,
                                                              "m (prompt_tokens_excluded=3)": 0.8255}


def test_rows_are_formed_within_each_model():
    """A combination is filled in only by its own model's (one model's settings never hide another's row)."""
    from embench.report.protocol_groups import row_keys

    entries = [("a", ("x", None)), ("b", ("x", None)), ("a", ("x", "y")), ("b", (None, "z")), ("a", ("x", None))]
    assert row_keys(entries) == [("b", "x", None), ("a", "x", "y"), ("b", None, "z")]
