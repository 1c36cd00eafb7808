"""The STS scorer: every aggregation and correlation against an independent scipy computation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import embench
from embench.data import DataRoot
from embench.encoding.engine import Engine
from embench.tasks import TASKS
from embench.tasks.sts import scoring
from embench.tasks.sts.scoring import aggregate, similarity


def _synthetic():
    """Three subsets of different sizes, offsets and noise, so all, mean and wmean all differ."""
    rng = np.random.default_rng(0)
    groups = []
    for name, n, offset, noise in (("a", 40, 0.0, 0.2), ("b", 120, 2.0, 1.0), ("c", 15, -1.0, 0.05)):
        gold = rng.uniform(0, 5, n)
        system = gold + offset * 0.3 + rng.normal(0, noise, n) + (offset > 0) * rng.uniform(0, 3, n)
        groups.append((name, system, gold))
    return groups


def test_all_mean_wmean_differ_and_equal_scipy():
    groups = _synthetic()
    got = aggregate(groups)
    for corr, fn in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr)):
        per = [fn(s, g)[0] for _, s, g in groups]
        n = [len(g) for _, _, g in groups]
        pooled = fn(np.concatenate([s for _, s, _ in groups]), np.concatenate([g for _, _, g in groups]))[0]
        assert got["all"][corr] == pytest.approx(pooled, abs=1e-12)
        assert got["mean"][corr] == pytest.approx(np.mean(per), abs=1e-12)
        assert got["wmean"][corr] == pytest.approx(np.dot(per, n) / np.sum(n), abs=1e-12)
        values = [got["all"][corr], got["mean"][corr], got["wmean"][corr]]
        assert min(abs(a - b) for i, a in enumerate(values) for b in values[i + 1 :]) > 1e-3
        for (name, _s, g), p in zip(groups, per, strict=True):
            assert got["subsets"][name][corr] == pytest.approx(p, abs=1e-12)
            assert got["subsets"][name]["n"] == len(g)


def test_all_aggregation_pools_subsets_before_correlating():
    # Two subsets, each perfectly ranked, but offset so that pooling them breaks the ranking.
    groups = [("x", np.array([0.0, 1.0, 2.0]), np.array([3.0, 4.0, 5.0])), ("y", np.array([10.0, 11.0, 12.0]), np.array([0.0, 1.0, 2.0]))]
    got = aggregate(groups)
    assert got["mean"]["spearman"] == pytest.approx(1.0)
    assert got["all"]["spearman"] < 0


def test_similarity_cosine_and_dot():
    a = np.array([[3.0, 4.0], [1.0, 0.0]])
    b = np.array([[6.0, 8.0], [0.0, 2.0]])
    assert similarity(a, b, "cosine") == pytest.approx([1.0, 0.0])
    assert similarity(a, b, "dot") == pytest.approx([50.0, 0.0])


@pytest.mark.parametrize("task", ["STS12", "STS16", "SICKRelatedness"])
@pytest.mark.slow  # over 1 s: the fast tier stays under a minute
def test_task_scores_equal_independent_scipy_on_real_data(task, data_root, tiny_bert_dir, monkeypatch):
    """The record's six numbers and per-subset values, recomputed with scipy from independently read files.

    Both sides correlate the same similarity values: the scorer's, captured as it computes them (and
    checked against a textbook cosine of the same vectors). Recomputing the cosine here instead would
    differ in the last bits (summation order varies with the CPU's SIMD width), and the near-tied
    cosines of a random model would then swap ranks and move Spearman in the fifth decimal.
    """
    root = DataRoot(data_root)
    enc = embench.load_model(tiny_bert_dir, pooling="mean", device="cpu")
    engine = Engine(enc, batch_size=256)
    scored, real = [], scoring.similarity  # the similarities the scorer computes, one array per subset, in order

    def spy(a, b, kind="cosine"):
        scored.append(real(a, b, kind))
        return scored[-1]

    monkeypatch.setattr(scoring, "similarity", spy)
    prepared = TASKS.get(task).prepare(root, embench.EvalProtocol())
    result = prepared.score(engine.embed).scores
    sims = dict(zip(result["subsets"], scored, strict=True))
    # Independent path: read the files directly, SentEval-style.
    groups = _read_independently(root, task)
    sys_all, gold_all, per = [], [], {}
    for name, left, right, gold in groups:
        a, b = engine.embed(left).astype(np.float64), engine.embed(right).astype(np.float64)
        cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        assert sims[name] == pytest.approx(cos, rel=0, abs=1e-12)  # the scorer's cosine, to the last bits
        per[name] = (stats.pearsonr(sims[name], gold)[0], stats.spearmanr(sims[name], gold)[0], len(gold))
        sys_all.append(sims[name])
        gold_all.append(gold)
    n = np.array([v[2] for v in per.values()])
    for i, corr in enumerate(("pearson", "spearman")):
        vals = np.array([v[i] for v in per.values()])
        assert result["all"][corr] == pytest.approx(
            (stats.pearsonr if i == 0 else stats.spearmanr)(np.concatenate(sys_all), np.concatenate(gold_all))[0], abs=1e-6
        )
        assert result["mean"][corr] == pytest.approx(vals.mean(), abs=1e-6)
        assert result["wmean"][corr] == pytest.approx((vals * n).sum() / n.sum(), abs=1e-6)
    assert {k: v["n"] for k, v in result["subsets"].items()} == {k: v[2] for k, v in per.items()}


def _read_independently(root: DataRoot, task: str):
    base = root.senteval / "STS"
    if task == "SICKRelatedness":
        rows = [line.split("\t") for line in (root.senteval / "SICK" / "SICK_test_annotated.txt").read_text().splitlines()[1:]]
        return [("test", [" ".join(r[1].split()) for r in rows], [" ".join(r[2].split()) for r in rows], np.array([float(r[3]) for r in rows]))]
    folder = base / f"{task}-en-test"
    out = []
    for gs in sorted(folder.glob("STS.gs.*.txt")):
        subset = gs.name[len("STS.gs.") : -len(".txt")]
        if subset == "ALL":
            continue
        inputs = (folder / f"STS.input.{subset}.txt").read_text(encoding="utf-8").splitlines()
        golds = gs.read_text(encoding="utf-8").splitlines()
        keep = [(i.split("\t"), g) for i, g in zip(inputs, golds, strict=True) if g.strip()]
        out.append((subset, [" ".join(p[0].split()) for p, _ in keep], [" ".join(p[1].split()) for p, _ in keep], np.array([float(g) for _, g in keep])))
    return out


def test_similarities_equal_up_to_rounding_have_no_correlation():
    from scipy.stats import pearsonr

    from embench.tasks.sts.scoring import correlations

    gold = np.arange(10, dtype=np.float64)
    noise = 1 + 1e-12 * np.random.default_rng(0).standard_normal(10)  # a text's cosine with itself, 1 +- rounding
    assert np.isnan(correlations(noise, gold)["pearson"]) and np.isnan(correlations(noise, gold)["spearman"])
    assert np.isnan(correlations(gold, np.full(10, 3.0))["pearson"])
    narrow = 0.99 + 1e-4 * gold  # an anisotropic model: every cosine near 1, yet ordered
    assert correlations(narrow, gold)["pearson"] == pytest.approx(pearsonr(narrow, gold)[0]) == pytest.approx(1.0)
