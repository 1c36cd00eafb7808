"""attention, cls-energy and token-dependency on decoder LLMs: left padding, last-token pivot."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import embench
from embench.analysis import attention as att
from embench.analysis.registry import run_many
from embench.analysis.token_pass import TokenRequest, token_pass


@pytest.fixture(scope="module")
def tiny_llama_dir(tiny_model):
    from transformers import LlamaConfig, LlamaModel

    return tiny_model("tiny-llama-analyses", lambda vocab: LlamaModel(LlamaConfig(
        vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
        intermediate_size=64, max_position_embeddings=128)))


def test_cls_energy_with_the_last_token_as_pivot_by_hand():
    context = np.array([[3.0, 4.0], [1.0, 0.0], [0.0, 2.0], [9.0, 9.0]])  # row 3 is padding
    # pivot = last real row (0, 2): ||(0, 2)|| / ||rows 0, 1||_F = 2 / sqrt(9 + 16 + 1)
    assert att.cls_energy_weight(context, 3, pivot=-1) == pytest.approx(2 / np.sqrt(26))
    assert att.cls_energy_weight(context, 3) == pytest.approx(5 / np.sqrt(1 + 4))


def test_shares_of_a_left_padded_sentence_equal_those_of_the_sentence_alone(tiny_llama_dir, one_thread):
    enc = embench.load_model(tiny_llama_dir, bidirectional_last=1, bidirectional_mode="mask")  # one stack: its maps
    short, long = "A man plays a guitar.", "Two dogs run through a field of deep snow while a boy watches them."
    got = []
    token_pass([TokenRequest(enc, [short, long], lambda tb, rows: got.append(tb), attentions=True)], 2)
    alone = []
    token_pass([TokenRequest(enc, [short], lambda tb, rows: alone.append(tb), attentions=True)], 1)
    batch, single = got[0], alone[0]
    row = batch.texts.index(short)
    real = att._real(batch, row)
    assert real[0] > 0  # the short text is padded on the left
    for a_batch, a_single in zip(batch.attentions, single.attentions, strict=True):
        s1 = att.sink_shares(a_batch[row].numpy(), real, None)
        s2 = att.sink_shares(a_single[0].numpy(), len(real), None)
        assert s1["cls"] == pytest.approx(s2["cls"], abs=1e-5) and s1["sep"] == pytest.approx(s2["sep"], abs=1e-5)
    # the causal first layer: the first real token attends only to itself; the bidirectional last layer: to everything
    first = batch.attentions[0][row].numpy()[:, real[0], :]
    assert np.allclose(first[:, real[0]], 1.0)
    assert (batch.attentions[1][row].numpy()[:, real[0], real[1:]] > 0).all()


@pytest.mark.slow
def test_the_three_per_token_analyses_run_on_a_decoder(tiny_llama_dir, tiny_bert_dir, data_root, tmp_path):
    res = run_many(["attention", "cls-energy", "token-dependency"], [str(tiny_llama_dir), str(tiny_bert_dir)], tmp_path,
                   {"attention": {"limit": 12}, "cls-energy": {"limit": 12}, "token-dependency": {"limit": 12}},
                   labels=["llama", "bert"], data=data_root, use_cache=False, prompt=None)
    energy = res["cls-energy"].tables["cls_energy"]
    assert set(zip(energy["model"], energy["pivot"], strict=True)) == {("llama", "last"), ("bert", "first")}
    assert energy["cls_energy"].notna().all()
    sinks = res["attention"].tables["attention_sinks"]
    assert sinks[["cls_share", "sep_share"]].notna().all().all() and len(sinks) == 4
    dep = pd.read_csv(tmp_path / "token_dependency.csv")
    assert set(dep.groupby("model")["pivot"].first().items()) == {("llama", "last"), ("bert", "first")}
    assert dep["spearman"].between(-1, 1).all()


@pytest.mark.slow
def test_the_auto_pivot_follows_the_pooling_used_in_every_per_token_analysis(tiny_bert_dir, data_root, tmp_path):
    """An encoder read by its last token (--pooling last_token) gets the last-token pivot in token-dependency too,
    as in cls-energy and attention: the pooling used decides, not the architecture's default."""
    res = run_many(["cls-energy", "token-dependency"], [str(tiny_bert_dir)], tmp_path,
                   {"cls-energy": {"limit": 6}, "token-dependency": {"limit": 6}}, labels=["bert"], data=data_root,
                   use_cache=False, pooling="last_token")
    assert set(res["cls-energy"].tables["cls_energy"]["pivot"]) == {"last"}
    assert set(pd.read_csv(tmp_path / "token_dependency.csv")["pivot"]) == {"last"}


def _per_token(model, out, data_root, **load):
    names = ["attention", "cls-energy", "token-dependency"]
    res = run_many(names, [str(model)], out, {n: {"limit": 6} for n in names}, labels=["llama"], data=data_root,
                   use_cache=False, **load)
    return (res["attention"].tables["attention_sinks"], res["cls-energy"].tables["cls_energy"],
            res["attention"].summary["maps"], pd.read_csv(out / "token_dependency.csv"))


@pytest.mark.slow
def test_a_sum_mode_s_bidirectional_branch_is_reported_beside_the_unchanged_causal_layers(tiny_llama_dir, data_root, tmp_path):
    """--bidirectional-last 1 (sum mode): cls-energy crashed (the branch's value projections outnumbered the causal
    attentions) and attention showed the causal stack only, without a word. The branch's layer now has rows of its
    own, named and labelled, and the causal layers' rows are those of the model without the branch."""
    sinks, energy, maps, dep = _per_token(tiny_llama_dir, tmp_path / "sum", data_root, bidirectional_last=1)
    causal_sinks, causal_energy, _, causal_dep = _per_token(tiny_llama_dir, tmp_path / "causal", data_root)
    branch = "llama (bidirectional branch)"
    for table, causal, column in ((sinks, causal_sinks, "cls_share"), (energy, causal_energy, "cls_energy")):
        assert table[["model", "stack", "layer"]].values.tolist() == [
            ["llama", "main", 1], ["llama", "main", 2], [branch, "bidirectional branch", 2]]
        np.testing.assert_allclose(table[column][:2], causal[column], rtol=1e-5)
        assert np.isfinite(table[column]).all() and table[column][2] != pytest.approx(table[column][1])
    assert [m["layer_numbers"] for m in maps[branch]] == [[2]] and [m["layer_numbers"] for m in maps["llama"]] == [[1, 2]]
    assert (tmp_path / "sum" / "attention_maps.png").exists()
    assert set(dep["stack"]) == {"main + bidirectional branch"} and set(causal_dep["stack"]) == {"main"}


@pytest.mark.slow
def test_the_branch_rows_are_the_branch_s_own_attention(tiny_llama_dir, one_thread):
    """With K = L the branch is the whole model run without the causal mask on the embeddings: what the one-stack
    modes compute in every layer (sum: padding masked, as mask; sum-code: padding attended, as billm)."""
    texts = ["A man plays a guitar.", "Two dogs run through a field of deep snow while a boy watches them."]

    def batch(mode):
        got = []
        enc = embench.load_model(tiny_llama_dir, bidirectional_last=2, bidirectional_mode=mode)
        token_pass([TokenRequest(enc, texts, lambda tb, rows: got.append(tb), values=True)], 2)
        return got[0]

    for branched, stack in (("sum", "mask"), ("sum-code", "billm")):
        two, one = batch(branched), batch(stack)
        assert two.branch_layers == (1, 2) and len(two.attentions) == len(two.contexts) == 2
        for a, b in zip(two.branch_attentions + tuple(two.branch_contexts), one.attentions + tuple(one.contexts), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
