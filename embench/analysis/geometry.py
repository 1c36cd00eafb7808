"""Geometry of an embedding space: alignment, uniformity, singular spectrum, anisotropy, effective rank.

* Alignment and uniformity (Wang and Isola 2020, as SimCSE Eqs. 2-3 and Figure 2 use them), on
  L2-normalised embeddings: ``align = E ||f(x) - f(x+)||^2`` over STS-B pairs with gold score
  above 4; ``uniform = log E exp(-t ||f(x) - f(y)||^2)`` over distinct pairs of all STS-B
  sentences, t = 2. Lower is better for both. Each comes with a jackknife standard error
  (``alignment_se``: delete one positive pair, which for a mean is its textbook standard error;
  ``uniformity_se``: delete one sentence, exact and O(n^2) from the per-sentence potential sums,
  where a bootstrap would need O(n^2) per replicate and would pair a resampled sentence with its
  own copy).
* Spectrum (SimCSE Figure F.1): the singular values of the matrix of STS-B sentence embeddings,
  divided by the largest. SimCSE does not say whether it centres or normalises first; embench
  uses the vectors the model gives, uncentred (``center=True`` subtracts the mean).
* Anisotropy (Ethayarajh 2019): the mean cosine similarity of two different sentences; by default
  the exact mean over every distinct pair, ``n_pairs`` samples random pairs instead.
* Effective rank (Roy and Vetterli 2007): exp of the Shannon entropy of the singular values
  divided by their sum.
* ``top1_share``: the top singular direction's share of the energy, s_1^2 / sum of s_i^2 (0.929 for a
  random BERT's anisotropic space, 0.037 for all-MiniLM-L6-v2).

Uniformity runs over row blocks of at most 2^26 distances, so memory stays bounded (about 0.5 GB
per temporary array) rather than O(n^2).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.errors import EmbenchError
from ..report import style
from ..report.panels import alignment_uniformity as draw_alignment_uniformity
from .base import AnalysisResult, analysis
from .inputs import checkpoint_series, checkpoint_step, stsb, unique, write_csv

MAX_BLOCK_ELEMENTS = 1 << 26


def normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def alignment(a: np.ndarray, b: np.ndarray, alpha: float = 2.0) -> float:
    """Mean ||f(x) - f(x+)||^alpha over positive pairs (rows of ``a`` and ``b``), after L2 normalisation."""
    return alignment_with_se(a, b, alpha)[0]


def alignment_with_se(a: np.ndarray, b: np.ndarray, alpha: float = 2.0) -> tuple[float, float]:
    """(alignment, its standard error over the pairs: std / sqrt(n), NaN for one pair)."""
    a, b = normalise(a), normalise(b)
    if a.shape != b.shape or len(a) == 0:
        raise EmbenchError(f"alignment needs two equal, non-empty sets of vectors; got {a.shape} and {b.shape}")
    terms = np.linalg.norm(a - b, axis=1) ** alpha
    se = float(terms.std(ddof=1) / np.sqrt(len(terms))) if len(terms) > 1 else float("nan")
    return float(terms.mean()), se


def potential_sums(x: np.ndarray, t: float = 2.0, block_size: int = 2048) -> np.ndarray:
    """r_i = sum over j != i of exp(-t ||f(x_i) - f(x_j)||^2), after L2 normalisation, in row blocks."""
    x = normalise(x)
    n = len(x)
    sq = (x * x).sum(1)
    # Cap a block at MAX_BLOCK_ELEMENTS distances (512 MB in float64), whatever n is.
    block_size = max(1, min(block_size, MAX_BLOCK_ELEMENTS // max(n, 1)))
    sums = np.zeros(n)
    for b in range(0, n, block_size):
        rows = x[b : b + block_size]
        d2 = np.maximum(sq[b : b + block_size, None] + sq[None, b:] - 2.0 * rows @ x[b:].T, 0.0)
        # each pair i < j once (in the diagonal block, the strict upper triangle), credited to both i and j
        mask = np.arange(b, b + len(rows))[:, None] < np.arange(b, n)[None, :]
        k = np.where(mask, np.exp(-t * d2), 0.0)
        sums[b : b + len(rows)] += k.sum(1)
        sums[b:] += k.sum(0)
    return sums


def uniformity(x: np.ndarray, t: float = 2.0, block_size: int = 2048) -> float:
    """log of the mean of exp(-t ||f(x) - f(y)||^2) over distinct pairs, after L2 normalisation."""
    return uniformity_with_se(x, t, block_size)[0]


def uniformity_with_se(x: np.ndarray, t: float = 2.0, block_size: int = 2048) -> tuple[float, float]:
    """(uniformity, its delete-one-sentence jackknife standard error; NaN under three sentences).

    Without sentence i the pair sum is S - r_i over (n-1)(n-2)/2 pairs (r from :func:`potential_sums`), so
    every leave-one-out value comes from one pass; se = sqrt((n-1)/n * sum_i (u_(-i) - mean u_(-))^2)."""
    n = len(x)
    if n < 2:
        raise EmbenchError("uniformity needs at least two vectors")
    r = potential_sums(x, t, block_size)
    total = r.sum() / 2
    value = float(np.log(total / (n * (n - 1) / 2)))
    if n < 3:
        return value, float("nan")
    loo = np.log((total - r) / ((n - 1) * (n - 2) / 2))
    return value, float(np.sqrt((n - 1) / n * np.sum((loo - loo.mean()) ** 2)))


def singular_spectrum(x: np.ndarray, center: bool = False) -> np.ndarray:
    """Singular values of the embedding matrix (rows = sentences), largest first."""
    x = np.asarray(x, dtype=np.float64)
    if center:
        x = x - x.mean(0)
    return np.linalg.svd(x, compute_uv=False)


def effective_rank(singular_values: np.ndarray) -> float:
    """exp(entropy of s / sum(s)) (Roy and Vetterli 2007)."""
    s = np.asarray(singular_values, dtype=np.float64)
    p = s[s > 0] / s.sum()
    return float(np.exp(-(p * np.log(p)).sum()))


def anisotropy(x: np.ndarray, n_pairs: int | None = None, seed: int = 42) -> float:
    """Mean cosine of two different sentences: exact over all distinct pairs, or ``n_pairs`` random ones."""
    u = normalise(x)
    n = len(u)
    if n < 2:
        raise EmbenchError("anisotropy needs at least two vectors")
    if n_pairs is None:
        # sum over i != j of u_i . u_j = ||sum u||^2 - sum ||u_i||^2, without the n x n matrix
        s = u.sum(0)
        return float((s @ s - (u * u).sum()) / (n * (n - 1)))
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, n_pairs)
    j = (i + rng.integers(1, n, n_pairs)) % n  # j != i
    return float(np.einsum("ij,ij->i", u[i], u[j]).mean())


# -- analyses --------------------------------------------------------------------------------
@analysis("alignment-uniformity", scores={"alignment": "lower", "uniformity": "lower"})  # Wang & Isola 2020: both lower is better
def alignment_uniformity(refs, ctx, out, split: str = "test", text: str = "senteval", threshold: float = 4.0,
                         t: float = 2.0, block_size: int = 2048) -> AnalysisResult:
    """SimCSE Figure 2/3: models as points (checkpoint folders as trajectories) in the (uniform, align) plane."""
    pairs = stsb(ctx.root, split, text)
    pos = pairs.gold > threshold
    if not pos.any():
        raise EmbenchError(f"no STS-B {split} pair has a gold score above {threshold}")
    sentences = unique(pairs.left + pairs.right)
    rows = []
    for ref in refs:
        series = checkpoint_series(ref.spec)
        points = [(c, ref.__class__(p, ref.label, dict(ref.options))) for c, p in series] if series else [("", ref)]
        for i, (ckpt, r) in enumerate(points):
            step = checkpoint_step(ckpt, i)  # a series' training step (its folder's name), else its place in it
            enc = r.encoder()
            emb = dict(zip(sentences, ctx.embed(enc, sentences), strict=True))
            a = np.stack([emb[s] for s, keep in zip(pairs.left, pos, strict=True) if keep])
            b = np.stack([emb[s] for s, keep in zip(pairs.right, pos, strict=True) if keep])
            x = np.stack([emb[s] for s in sentences])
            align, align_se = alignment_with_se(a, b)
            uniform, uniform_se = uniformity_with_se(x, t, block_size)
            rows.append({"model": ref.label, "checkpoint": ckpt, "step": step, "alignment": align, "alignment_se": align_se,
                         "uniformity": uniform, "uniformity_se": uniform_se, "n_positive_pairs": int(pos.sum()),
                         "n_sentences": len(sentences), "split": split, "threshold": threshold, "t": t})
    frame = pd.DataFrame(rows)
    files = [write_csv(frame, out, "alignment_uniformity")]
    files += _plot_alignment_uniformity(frame, out)
    return AnalysisResult("alignment-uniformity", {"alignment_uniformity": frame}, files)


def _plot_alignment_uniformity(frame: pd.DataFrame, out) -> list:
    """The report's panel (:func:`embench.report.panels.alignment_uniformity`), error bars of one standard error."""
    models = list(dict.fromkeys(frame["model"]))
    with style.paper_style():
        fig, axes = style.figure()
        draw_alignment_uniformity(axes[0, 0], frame, dict(zip(models, style.palette(len(models)), strict=True)))
        axes[0, 0].legend(loc="best")
        return style.save(fig, out, "alignment_uniformity")


@analysis("spectrum")
def spectrum(refs, ctx, out, split: str = "test", text: str = "senteval", center: bool = False,
             n_pairs: int | None = None, seed: int = 42) -> AnalysisResult:
    """SimCSE Figure F.1: normalised singular values of STS-B sentence embeddings; anisotropy; effective rank."""
    pairs = stsb(ctx.root, split, text)
    sentences = unique(pairs.left + pairs.right)
    spec_rows, summary = [], []
    for ref in refs:
        x = ctx.embed(ref.encoder(), sentences)
        s = singular_spectrum(x, center)
        for i, v in enumerate(s, start=1):
            spec_rows.append({"model": ref.label, "index": i, "singular_value": float(v), "normalised": float(v / s[0])})
        summary.append({"model": ref.label, "n_sentences": len(x), "dim": x.shape[1], "anisotropy": anisotropy(x, n_pairs, seed),
                        "effective_rank": effective_rank(s), "top1_share": float(s[0] ** 2 / (s**2).sum()),
                        "center": center, "split": split})
    spec_frame, summary_frame = pd.DataFrame(spec_rows), pd.DataFrame(summary)
    files = [write_csv(spec_frame, out, "spectrum"), write_csv(summary_frame, out, "spectrum_summary")]
    with style.paper_style():
        fig, axes = style.figure()
        ax = axes[0, 0]
        for c, (model, g) in zip(style.palette(len(refs)), spec_frame.groupby("model", sort=False), strict=True):
            row = summary_frame.set_index("model").loc[model]
            ax.plot(g["index"], g["normalised"], color=c,
                    label=style.legend_label(f"{model} (aniso. {row['anisotropy']:.2f}, eff. rank {row['effective_rank']:.0f})"))
        ax.set_yscale("log")
        # A few trailing values can be ~1e-17 (numerical rank deficiency); they would squash the
        # curves, so the axis stops at the decade below the 98th-percentile index of every model.
        floor = min(g["normalised"].iloc[int(0.98 * (len(g) - 1))] for _, g in spec_frame.groupby("model"))
        ax.set_ylim(bottom=10 ** np.floor(np.log10(max(floor, 1e-12))), top=1.5)
        ax.set_xlabel("singular value index")
        ax.set_ylabel("normalised singular value")
        ax.legend(loc="lower left")
        files += style.save(fig, out, "spectrum")
    return AnalysisResult("spectrum", {"spectrum": spec_frame, "spectrum_summary": summary_frame}, files)
