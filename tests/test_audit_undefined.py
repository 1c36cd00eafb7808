"""An audit's precision or variant whose score is undefined on one task (every similarity equal, as 1-bit vectors
of a tiny model can give) keeps its other tasks' scores; the undefined cell and the row's Avg. are left empty."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from embench.audit import dimensions
from embench.audit.knobs import Variant
from embench.audit.protocol import knob_effects
from embench.core.errors import EmbenchError, UndefinedScoreError
from embench.evaluation.evaluation_view import Evaluation
from embench.evaluation.results import Record


def _record(task: str, score: float, dim: int | None) -> Record:
    return Record(task=task, display=task, kind="sts", model="m", main_score=score, scores={}, protocol={},
                  encoder={"truncate_dim": dim})


def _fake_evaluate(model, suite, *, tasks, truncate_dim, quantize, **_):
    records = [_record(t, 0.5 + 0.1 * i + (0.01 if d else 0.0), d) for i, t in enumerate(tasks) for d in truncate_dim]
    if quantize == "binary":  # STS13 undefined at every dimension: the rest scored, as evaluate() raises it
        part = Evaluation(records=[r for r in records if r.task != "STS13"])
        raise UndefinedScoreError("STS13: the score is undefined (nan)", part)
    if quantize == "int8":
        raise EmbenchError("some other fault")
    return Evaluation(records=records)


def test_dimension_grid_keeps_the_defined_cells_of_an_undefined_precision(monkeypatch):
    monkeypatch.setattr(dimensions, "evaluate", _fake_evaluate)
    said: list[str] = []
    grid = dimensions.dimension_grid("m", ["STS12", "STS13"], {}, 384, [64], ["binary"], said.append)
    binary = grid.xs("binary", level="precision")
    assert binary.loc[384, "STS12"] == pytest.approx(0.5) and binary.loc[64, "STS12"] == pytest.approx(0.51)
    assert math.isnan(binary.loc[384, "STS13"]) and math.isnan(binary.loc[384, "Avg."])  # not the mean of STS12 alone
    full = grid.xs(dimensions.AS_ENCODED, level="precision")
    assert full.loc[384, "Avg."] == pytest.approx(0.55)
    assert len(said) == 1 and "binary" in said[0] and "STS13" in said[0] and "left empty" in said[0]


def test_dimension_grid_does_not_swallow_another_fault(monkeypatch):
    monkeypatch.setattr(dimensions, "evaluate", _fake_evaluate)
    with pytest.raises(EmbenchError, match="some other fault"):
        dimensions.dimension_grid("m", ["STS12"], {}, 384, [], ["int8"], lambda _: None)


def test_an_undefined_variant_keeps_its_other_tasks_with_a_warning():
    v = Variant(label="quantize=binary", knobs={"quantize": "binary"})
    part = Evaluation(records=[_record("STS12", 0.4, None)])

    def run():
        raise UndefinedScoreError("STS13: the score is undefined (nan)", part)

    with pytest.warns(UserWarning, match="quantize=binary.*STS13.*left empty"):
        ev = dimensions.undefined_as_empty(v, run)
    assert [r.task for r in ev.records] == ["STS12"]


def test_knob_effects_ranks_past_a_variant_whose_avg_is_undefined():
    frame = pd.DataFrame({"STS12": [0.5, 0.4, 0.3], "STS13": [0.6, math.nan, 0.6]},
                         index=["baseline", "quantize=binary", "quantize=int8"])
    frame["Avg."] = frame.mean(axis=1, skipna=False)
    vs = [Variant(label=lab, knobs={"quantize": lab.split("=")[1]}) for lab in frame.index[1:]]
    eff = knob_effects(frame, vs)
    assert eff.loc[0, "value"] == "int8" and eff.loc[0, "delta_avg"] == pytest.approx(-0.1)


def test_an_undefined_variant_of_any_knob_is_an_empty_cell_named_in_a_warning():
    """``embench audit`` on a decoder LLM died at pooling=cls (every vector equal: no correlation) with an error that
    named no variant, and lost the ten variants already scored; any variant's undefined score is now an empty cell."""
    v = Variant(label="pooling=cls", knobs={"pooling": "cls"})
    part = Evaluation(records=[_record("STS12", 0.4, None)])

    def undefined():
        raise UndefinedScoreError("STS13: the score is undefined (nan)", part)

    with pytest.warns(UserWarning, match="audit variant pooling=cls: STS13.*left empty"):
        ev = dimensions.undefined_as_empty(v, undefined)
    assert [r.task for r in ev.records] == ["STS12"]

    def other():
        raise EmbenchError("some other fault")

    with pytest.raises(EmbenchError, match="some other fault"):  # only an undefined score is an empty cell
        dimensions.undefined_as_empty(v, other)


def test_the_pooling_knob_leaves_out_first_token_poolers_of_a_decoder():
    """The pooling knob tried cls and cls_before_pooler on a decoder LLM, whose first token sees nothing of the text
    (every vector equal, an undefined score); they are left out by the rule training follows (Family.training_pooling)."""
    from types import SimpleNamespace

    from embench.audit.knobs import variants

    def poolings(model_type):
        config = SimpleNamespace(model_type=model_type) if model_type else None
        return [v.knobs["pooling"] for v in variants(["pooling"], config)[1:]]

    assert poolings("llama") == poolings("qwen2") == ["mean", "first_last_avg", "embed_last_avg"]
    assert poolings("bert") == ["cls", "mean", "first_last_avg", "embed_last_avg", "cls_before_pooler"]
    assert poolings(None) == poolings("bert")


@pytest.mark.slow
def test_the_pooling_knob_keeps_first_token_poolers_of_a_decoder_whose_last_layer_sees_both_ways(tiny_llama_dir, data_root,
                                                                                                tmp_path):
    """Under --bidirectional-last the first token of a decoder attends to the whole text in the last layers (BeLLM's
    Eq. 5), so pooling=cls reads it; the audit left the cls variant out all the same."""
    from embench.audit.protocol import audit

    result = audit(str(tiny_llama_dir), knobs=["pooling"], tasks=["STS12"], data=data_root, results_dir=tmp_path / "r",
                   cache_dir=tmp_path / "c", device="cpu", bidirectional_last=1, sample=200)
    cls = result.rows.loc["pooling=cls"]  # a KeyError before: no such row
    assert cls.notna().all() and cls["Avg."] != result.rows.loc["baseline", "Avg."]
