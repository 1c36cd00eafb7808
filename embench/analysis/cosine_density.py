"""Cosine similarity of STS-B pairs grouped by gold score (SimCSE Figure G.1).

For each STS-B pair, the cosine of its two sentence embeddings; pairs are put in 5 groups by gold
score. SimCSE does not give the group boundaries; embench's default ``edges`` are the integer bins
[0,1), [1,2), [2,3), [3,4), [4,5] (the last one closed); ``groups="equal-count"`` puts the
boundaries at the gold scores' quantiles instead, so every group holds about the same number of pairs
(JTCSE's grouping; ties in the gold scores can keep the counts from being exactly equal). Densities are Gaussian kernel estimates
(scipy's ``gaussian_kde``, Scott's bandwidth); the numbers behind them (per pair and per group) go
to CSV.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.errors import EmbenchError
from ..report import style
from ..report.panels import cosine_ridges
from .base import AnalysisResult, analysis
from .inputs import stsb, unique, write_csv

DEFAULT_EDGES = (0.0, 1.0, 2.0, 3.0, 4.0, 5.0)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity, in float64."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.einsum("ij,ij->i", a, b) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)


def gold_bins(gold: np.ndarray, edges=DEFAULT_EDGES) -> np.ndarray:
    """Group index of each gold score: [e0,e1), ..., [e_{k-1}, e_k] (last bin closed); -1 outside."""
    edges = np.asarray(edges, dtype=np.float64)
    if len(edges) < 2 or np.any(np.diff(edges) <= 0):
        raise EmbenchError(f"--edges must be increasing with at least two values; got {list(edges)}")
    idx = np.searchsorted(edges, gold, side="right") - 1
    idx[gold == edges[-1]] = len(edges) - 2
    idx[(gold < edges[0]) | (gold > edges[-1])] = -1
    return idx


def equal_count_edges(gold: np.ndarray, n_groups: int) -> tuple[float, ...]:
    """Boundaries at the gold scores' 0, 1/n, ..., 1 quantiles (repeated boundaries merged)."""
    if n_groups < 1:
        raise EmbenchError(f"equal-count groups need at least one group; got {n_groups}")
    edges = np.unique(np.quantile(np.asarray(gold, np.float64), np.linspace(0.0, 1.0, n_groups + 1)))
    if len(edges) < 2:
        raise EmbenchError("equal-count groups: every gold score is the same")
    return tuple(float(e) for e in edges)


def bin_labels(edges=DEFAULT_EDGES) -> list[str]:
    return [f"{lo:g}-{hi:g}" for lo, hi in zip(edges[:-1], edges[1:], strict=True)]


def cosine_by_bin(a: np.ndarray, b: np.ndarray, gold: np.ndarray, edges=DEFAULT_EDGES) -> pd.DataFrame:
    """Per gold-score group: n, mean, std, median of the pair cosines."""
    cos = cosines(a, b)
    idx = gold_bins(np.asarray(gold, np.float64), edges)
    rows = []
    for k, label in enumerate(bin_labels(edges)):
        c = cos[idx == k]
        rows.append({"bin": label, "n": int(len(c)), "mean": float(c.mean()) if len(c) else np.nan,
                     "std": float(c.std()) if len(c) else np.nan, "median": float(np.median(c)) if len(c) else np.nan})
    return pd.DataFrame(rows)


@analysis("cosine-density")
def cosine_density(refs, ctx, out, split: str = "test", text: str = "senteval", edges: tuple = DEFAULT_EDGES,
                   groups: str = "integer") -> AnalysisResult:
    """SimCSE Figure G.1: one panel per model, one density per gold-score group. ``groups``: ``integer``
    (the bins of ``edges``) or ``equal-count`` (as many groups as ``edges`` makes, at the gold quantiles)."""
    if groups not in ("integer", "equal-count"):
        raise EmbenchError(f"invalid cosine-density groups {groups!r}; choose integer or equal-count")
    edges = tuple(float(e) for e in edges)
    pairs = stsb(ctx.root, split, text)
    if groups == "equal-count":
        edges = equal_count_edges(pairs.gold, len(edges) - 1)
    sentences = unique(pairs.left + pairs.right)
    labels = bin_labels(edges)
    per_pair, per_bin = [], []
    for ref in refs:
        emb = dict(zip(sentences, ctx.embed(ref.encoder(), sentences), strict=True))
        a = np.stack([emb[s] for s in pairs.left])
        b = np.stack([emb[s] for s in pairs.right])
        cos = cosines(a, b)
        idx = gold_bins(pairs.gold, edges)
        per_pair.append(pd.DataFrame({"model": ref.label, "gold": pairs.gold, "bin": [labels[i] if i >= 0 else "" for i in idx], "cosine": cos}))
        per_bin.append(cosine_by_bin(a, b, pairs.gold, edges).assign(model=ref.label))
    pair_frame = pd.concat(per_pair, ignore_index=True)
    bin_frame = pd.concat(per_bin, ignore_index=True)[["model", "bin", "n", "mean", "std", "median"]]
    files = [write_csv(pair_frame, out, "cosine_density_pairs"), write_csv(bin_frame, out, "cosine_density")]
    files += _ridges(pair_frame, [r.label for r in refs], labels, out)
    return AnalysisResult("cosine-density", {"cosine_density": bin_frame, "cosine_density_pairs": pair_frame}, files)


def _ridges(frame: pd.DataFrame, models: list[str], labels: list[str], out) -> list:
    """Ridge plot, one panel per model: the report's cosine-density figure draws the same panels."""
    with style.paper_style():
        fig, axes = style.figure(ncols=len(models), height=2.4, sharey=True)
        cosine_ridges(axes[0], frame, models, labels)
        return style.save(fig, out, "cosine_density")
