"""In-batch negatives under a frozen encoder: how many would MultiCSR's mask remove? (MultiCSR Fig. 8, App. G)

For random batches of ``batch`` training triplets, the frozen encoder's cosine of each premise with the
entailment and the contradiction of every OTHER example of the batch: the 2N(N-1) in-batch negatives of
supervised SimCSE (§5.1). The share at or above ``sigma`` is what stage 3's mask (Eq. 6) would remove;
the paper reports that "more than 18.6%" exceed 0.7 for supervised SimCSE-RoBERTa on a batch of 256 of
its generated + NLI mixture. The own positive and own hard negative are counted apart, for reference.
Vectors come through the engine (and its cache); numbers go to CSV, the histogram to PNG/PDF.
"""

from __future__ import annotations

import random

import numpy as np
import pandas as pd

from ..core.errors import EmbenchError
from ..report import style
from .base import AnalysisResult, analysis
from .geometry import normalise
from .inputs import unique, write_csv

BIN_WIDTH = 0.05


def negative_cosines(anchor: np.ndarray, positive: np.ndarray, hard: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(in-batch negatives: 2N(N-1) cosines of each anchor with the others' hypotheses, own positives, own hard
    negatives) of one batch of unit vectors."""
    n = len(anchor)
    sp, sh = anchor @ positive.T, anchor @ hard.T
    others = ~np.eye(n, dtype=bool)
    return np.concatenate([sp[others], sh[others]]), np.diag(sp).copy(), np.diag(sh).copy()


@analysis("in-batch-similarity")
def in_batch_similarity(refs, ctx, out, train_data: str = "snli", batch: int = 256, batches: int = 4, sigma: float = 0.9,
                        seed: int = 1111) -> AnalysisResult:
    """MultiCSR Figure 8: the frozen encoder's cosines of in-batch negatives, ``sigma`` marked (Eq. 6)."""
    from ..data.training_sets import load

    if batch < 2 or batches < 1:
        raise EmbenchError(f"in-batch-similarity needs batch >= 2 and batches >= 1, got {batch} and {batches}")
    if not -1.0 <= sigma <= 1.0:
        raise EmbenchError(f"sigma is a cosine threshold in [-1, 1], got {sigma}")
    triplets = load("triplets", [train_data], ctx.root)
    if len(triplets) < batch:
        raise EmbenchError(f"--set train_data={train_data}: {len(triplets)} triplets are fewer than one batch of {batch}")
    rng = random.Random(seed)
    drawn = [rng.sample(range(len(triplets)), batch) for _ in range(batches)]  # batches as the trainer draws them: at random
    texts = unique([s for idx in drawn for i in idx for s in triplets[i]])
    edges = np.round(np.arange(-1.0, 1.0 + BIN_WIDTH / 2, BIN_WIDTH), 10)
    summary, hist = [], []
    for ref in refs:
        vec = dict(zip(texts, normalise(ctx.embed(ref.encoder(), texts)), strict=True))
        neg, own_pos, own_hard = [], [], []
        for idx in drawn:
            rows = [triplets[i] for i in idx]
            a, p, h = (np.stack([vec[r[k]] for r in rows]) for k in range(3))
            n_, op, oh = negative_cosines(a, p, h)
            neg.append(n_)
            own_pos.append(op)
            own_hard.append(oh)
        neg_all, pos_all, hard_all = np.concatenate(neg), np.concatenate(own_pos), np.concatenate(own_hard)
        summary.append({"model": ref.label, "train_data": train_data, "batch": batch, "batches": batches,
                        "negatives": len(neg_all), "share_at_or_above_sigma": float((neg_all >= sigma).mean()),
                        "sigma": sigma, "share_above_0.7": float((neg_all > 0.7).mean()),
                        "mean_negative": float(neg_all.mean()), "mean_own_positive": float(pos_all.mean()),
                        "mean_own_hard_negative": float(hard_all.mean()),
                        "per_batch_share": ";".join(f"{float((x >= sigma).mean()):.5f}" for x in neg)})
        counts, _ = np.histogram(np.clip(neg_all, -1.0, 1.0), bins=edges)
        hist.append(pd.DataFrame({"model": ref.label, "low": edges[:-1], "high": edges[1:], "count": counts,
                                  "percent": 100.0 * counts / max(len(neg_all), 1)}))
    summary_frame, hist_frame = pd.DataFrame(summary), pd.concat(hist, ignore_index=True)
    files = [write_csv(summary_frame, out, "in_batch_similarity"), write_csv(hist_frame, out, "in_batch_similarity_hist")]
    files += _plot(hist_frame, summary_frame, sigma, out)
    shown = summary_frame[["model", "negatives", "share_at_or_above_sigma", "share_above_0.7", "mean_negative",
                           "mean_own_positive", "mean_own_hard_negative"]]
    return AnalysisResult("in-batch-similarity", {"in_batch_similarity": shown, "in_batch_similarity_hist": hist_frame},
                          files, {"share_at_or_above_sigma": dict(zip(summary_frame.model, summary_frame.share_at_or_above_sigma,
                                                                       strict=True))})


def _plot(hist: pd.DataFrame, summary: pd.DataFrame, sigma: float, out) -> list:
    models = list(summary["model"])
    colours = style.palette(len(models))
    with style.paper_style():
        fig, axes = style.figure()
        ax = axes[0, 0]
        for colour, model in zip(colours, models, strict=True):
            g = hist[hist["model"] == model]
            share = float(summary.loc[summary["model"] == model, "share_at_or_above_sigma"].iloc[0])
            ax.stairs(g["percent"].to_numpy(), np.append(g["low"].to_numpy(), g["high"].iloc[-1]), color=colour,
                      label=style.legend_label(f"{model} ({100 * share:.2f}% >= {sigma:g})"))
        ax.axvline(sigma, color="black", ls="--", lw=0.8)
        ax.set_xlabel("cosine (premise, other examples' hypotheses)")
        ax.set_ylabel("% of in-batch negatives")
        ax.legend(frameon=False, fontsize="small")
        return style.save(fig, out, "in_batch_similarity")
