"""The one scorer every STS dataset shares.

For every task it returns, per subset, the number of scored pairs, Pearson and Spearman, and the
three aggregations of ``docs/PROTOCOLS.md`` for both correlations:

* ``all``: one correlation over the concatenated subsets (SimCSE Table B.1; MTEB's STS12-16);
* ``mean``: the plain average of per-subset correlations (SentEval);
* ``wmean``: the average weighted by scored pairs (BERT-flow, BERT-whitening).

``scoring=regressor`` is SentEval's original STS-B / SICK-R protocol instead: a regressor trained on
the frozen embeddings (:mod:`embench.tasks.senteval.relatedness`). The scorer never sees a model,
only an ``embed`` callable.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr, spearmanr

from ...evaluation.items import Items, items_digest
from ...evaluation.protocols import EvalProtocol
from ..base import Embed, Prepared, TaskScore


@dataclass
class PairGroup:
    """One subset or split of an STS task: aligned sentence pairs and their gold scores."""

    name: str
    left: list[str]
    right: list[str]
    gold: np.ndarray


def similarity(a: np.ndarray, b: np.ndarray, kind: str = "cosine") -> np.ndarray:
    """Row-wise similarity of two matrices, computed in float64."""
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    dot = np.einsum("ij,ij->i", a, b)
    if kind == "dot":
        return dot
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    cosines = dot / np.maximum(norms, 1e-12)
    return _exact_ties(cosines, dot, a, b) if _integers(a) and _integers(b) else cosines


def _integers(x: np.ndarray) -> bool:
    return bool(np.all(x == np.rint(x))) and float(np.abs(x).max(initial=0)) < 2**15


def _exact_ties(cosines: np.ndarray, dot: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosines of integer or bit vectors (``--quantize``) with exactly equal values made equal floats.

    Such cosines take few distinct values, and float64 separates equal ones (2/(sqrt2*sqrt2) = 0.9999999999999998
    but 1/(1*1) = 1.0): ranked as different, they moved Spearman by up to 0.3 points at 7 to 16 bits against
    exact ties. Two cosines are equal iff sign(dot)*dot^2/(|a|^2|b|^2) are equal rationals, compared in integers
    (exact below 2^63: 384 dims of int8 give about 6e14); each group takes the float of its first member."""
    dots = dot.astype(np.int64)
    squares = (np.einsum("ij,ij->i", a, a).astype(np.int64) * np.einsum("ij,ij->i", b, b).astype(np.int64))
    if len(dots) == 0 or float(np.abs(dot).max()) ** 2 >= 2**62 or int(squares.max()) >= 2**62:
        return cosines
    numerators = dots * dots
    common = np.maximum(np.gcd(numerators, squares), 1)
    keys = np.stack([np.sign(dots), numerators // common, squares // common], axis=1)
    _, first, groups = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    return cosines[first][groups.ravel()]


def _constant(values: np.ndarray) -> bool:
    """Equal up to rounding: a spread under a millionth of the values' size is float noise (a text's cosine with
    itself is 1 +- 1e-16, and with its own bf16 copy 1 - 1e-6), whose correlation would be a number of noise."""
    return bool(np.ptp(values) <= 1e-6 * np.abs(values).max())


def correlations(system: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """Pearson and Spearman of system scores against gold (NaN when either side is constant, up to rounding)."""
    if len(system) < 2 or _constant(system) or _constant(gold):
        return {"pearson": float("nan"), "spearman": float("nan")}
    return {"pearson": float(pearsonr(system, gold)[0]), "spearman": float(spearmanr(system, gold)[0])}


def aggregate(groups: list[tuple[str, np.ndarray, np.ndarray]]) -> dict:
    """Per-subset correlations and the ``all``, ``mean`` and ``wmean`` aggregations of both."""
    subsets = {}
    for name, system, gold in groups:
        subsets[name] = {"n": int(len(gold)), **correlations(system, gold)}
    n = np.array([s["n"] for s in subsets.values()], dtype=np.float64)
    out: dict = {"subsets": subsets}
    out["all"] = correlations(np.concatenate([g[1] for g in groups]), np.concatenate([g[2] for g in groups]))
    out["mean"] = {c: float(np.mean([s[c] for s in subsets.values()])) for c in ("pearson", "spearman")}
    out["wmean"] = {c: float(np.average([s[c] for s in subsets.values()], weights=n)) for c in ("pearson", "spearman")}
    out["n"] = int(n.sum())
    return out


def pair_items(names: list[str], lefts: list[list[str]], rights: list[list[str]], sims: list[np.ndarray],
               golds: list[np.ndarray]) -> Items:
    """Every pair's similarity and gold score, by subset, identified by the texts and gold scores."""
    digest = items_digest((t for a, b in zip(lefts, rights, strict=True) for t in (*a, *b)), golds)
    return Items("correlation", list(names), [np.asarray(s, dtype=np.float64) for s in sims],
                 [np.asarray(g, dtype=np.float64) for g in golds], digest)


def score_groups(groups: list[PairGroup], embed: Embed, protocol: EvalProtocol) -> TaskScore:
    scored = []
    for g in groups:
        sims = similarity(embed(g.left), embed(g.right), protocol.similarity)
        scored.append((g.name, sims, g.gold))
    result = aggregate(scored)
    main = result[protocol.aggregation][protocol.correlation]
    items = pair_items([g.name for g in groups], [g.left for g in groups], [g.right for g in groups],
                       [s for _, s, _ in scored], [g.gold for g in groups])
    return TaskScore(main=main, scores=result, items=items)


def similarity_prepared(groups: list[PairGroup], files: list[Path], protocol: EvalProtocol, **meta) -> Prepared:
    """Score the similarity of each pair against gold, subset by subset."""
    texts = [t for g in groups for t in (*g.left, *g.right)]
    return Prepared(
        texts=texts,
        files=files,
        score=lambda embed: score_groups(groups, embed, protocol),
        meta={"pairs": sum(len(g.gold) for g in groups), "subsets": [g.name for g in groups], **meta},
    )


def regressor_prepared(splits: dict[str, PairGroup], files: list[Path], protocol: EvalProtocol, **meta) -> Prepared:
    """SentEval's original protocol: train a regressor on train, select on dev, score test."""

    def score(embed: Embed) -> TaskScore:
        from ..senteval.relatedness import features, fit_predict, senteval_order  # torch: only when asked for

        data, test_pairs = {}, None
        for name, g in splits.items():
            order = senteval_order(g.left, g.right, g.gold)
            left, right = [g.left[i] for i in order], [g.right[i] for i in order]
            data[name] = (features(embed(left), embed(right)), g.gold[order])
            if name == "test":
                test_pairs = (left, right)
        dev_pearson, yhat = fit_predict(
            data["train"][0], data["train"][1], data["dev"][0], data["dev"][1], data["test"][0], seed=protocol.seed
        )
        corr = correlations(yhat, data["test"][1])
        n = len(yhat)
        result = {"subsets": {"test": {"n": n, **corr}}, "all": corr, "mean": corr, "wmean": corr, "n": n, "dev_pearson": dev_pearson}
        items = pair_items(["test"], [test_pairs[0]], [test_pairs[1]], [yhat], [data["test"][1]])
        return TaskScore(main=result[protocol.aggregation][protocol.correlation], scores=result, items=items)

    texts = [t for g in splits.values() for t in (*g.left, *g.right)]
    return Prepared(texts=texts, files=files, score=score, meta={"pairs": len(splits["test"].gold), "scoring": "regressor", **meta})
