"""openTSNE maps of labelled sets, coloured by label, annotated with kNN accuracy (cropping paper Figure 2).

The paper uses openTSNE with its default parameters on the (mean-pooled) embeddings and prints
the kNN accuracy in the full embedding space on each map; embench does the same, with a seed
(``random_state``) and a seeded subset of ``limit`` points (default 5,000: t-SNE on a whole set
takes minutes per model on a laptop). The kNN accuracy is computed on the same points.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..report import style
from .base import AnalysisResult, analysis
from .inputs import write_csv
from .knn import knn_accuracy, load_labelled


def tsne_map(x: np.ndarray, seed: int = 42, n_jobs: int = 1, **params) -> np.ndarray:
    """2-D openTSNE embedding of ``x`` (openTSNE defaults unless ``params`` says otherwise)."""
    from openTSNE import TSNE

    return np.asarray(TSNE(random_state=seed, n_jobs=n_jobs, **params).fit(np.asarray(x, dtype=np.float64)))


@analysis("tsne")
def tsne(refs, ctx, out, datasets: tuple = ("agnews",), limit: int | None = 5000, seed: int = 42, n_jobs: int = 1,
         k: int = 10, metric: str = "euclidean", perplexity: float = 30.0) -> AnalysisResult:
    """One t-SNE map per (dataset, model): datasets as rows, models side by side."""
    names = [datasets] if isinstance(datasets, str) else list(datasets)
    sets = [load_labelled(d, ctx.root, limit=limit, seed=seed) for d in names]
    points, accs = [], []
    for s in sets:
        for ref in refs:
            x = ctx.embed(ref.encoder(), s.texts)
            acc = knn_accuracy(x, s.labels, k=k, metric=metric, seed=seed)
            xy = tsne_map(x, seed=seed, n_jobs=n_jobs, perplexity=perplexity)
            points.append(pd.DataFrame({"model": ref.label, "dataset": s.name, "x": xy[:, 0], "y": xy[:, 1], "label": s.labels}))
            accs.append({"model": ref.label, "dataset": s.name, "n": len(x), **acc})
    frame, acc_frame = pd.concat(points, ignore_index=True), pd.DataFrame(accs)
    files = [write_csv(frame, out, "tsne"), write_csv(acc_frame, out, "tsne_knn")]
    with style.paper_style():
        fig, axes = style.figure(ncols=len(refs), nrows=len(sets), width=2.3 * len(refs) + 0.4, height=2.3 * len(sets))
        for i, s in enumerate(sets):
            classes = sorted(set(s.labels))
            colours = dict(zip(classes, _colours(len(classes)), strict=True))
            for j, ref in enumerate(refs):
                ax = axes[i, j]
                g = frame[(frame["model"] == ref.label) & (frame["dataset"] == s.name)]
                ax.scatter(g["x"], g["y"], c=[colours[lab] for lab in g["label"]], s=1.5, lw=0, rasterized=True)
                a = acc_frame[(acc_frame["model"] == ref.label) & (acc_frame["dataset"] == s.name)].iloc[0]
                ax.text(0.02, 0.98, f"kNN {100 * a['accuracy']:.1f}%", transform=ax.transAxes, va="top", fontsize=7)
                ax.set_xticks([])
                ax.set_yticks([])
                ax.set_aspect("equal", adjustable="datalim")
                for side in ("left", "bottom"):
                    ax.spines[side].set_visible(False)
                if i == 0:
                    ax.set_title(ref.label)
                if j == 0:
                    ax.set_ylabel(f"{s.name} ({len(classes)} classes)")
        fig.tight_layout()
        files += style.save(fig, out, "tsne")
    return AnalysisResult("tsne", {"tsne": frame, "tsne_knn": acc_frame}, files)


def _colours(n: int) -> list:
    import seaborn as sns

    return sns.color_palette("colorblind" if n <= 10 else "husl", n)
