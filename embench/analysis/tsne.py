"""openTSNE maps of labelled sets, coloured by label, annotated with kNN accuracy (cropping paper Figure 2).

The paper uses openTSNE with its default parameters on the (mean-pooled) embeddings and prints
the kNN accuracy in the full embedding space on each map; embench does the same (on the kNN analysis'
non-normalised embeddings, unless ``--normalize``), with a seed
(``random_state``) and a seeded subset of ``limit`` points (default 5,000: t-SNE on a whole set
takes minutes per model on a laptop). The kNN accuracy is computed on the same points.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..report import style
from .base import AnalysisResult, analysis
from .inputs import is_normalised, write_csv
from .knn import knn_accuracy, load_labelled

MAX_LEGEND = 20  # classes named in a legend; beyond that no palette keeps them apart either


def tsne_map(x: np.ndarray, seed: int = 42, n_jobs: int = 1, **params) -> np.ndarray:
    """2-D openTSNE embedding of ``x`` (openTSNE defaults unless ``params`` says otherwise)."""
    from openTSNE import TSNE

    return np.asarray(TSNE(random_state=seed, n_jobs=n_jobs, **params).fit(np.asarray(x, dtype=np.float64)))


@analysis("tsne", scores={"accuracy": "higher"})  # the kNN accuracy of tsne_knn
def tsne(refs, ctx, out, datasets: tuple = ("agnews",), limit: int | None = 5000, seed: int = 42, n_jobs: int = 1,
         k: int = 10, metric: str = "euclidean", perplexity: float = 30.0) -> AnalysisResult:
    """One t-SNE map per (dataset, model): datasets as rows, models side by side."""
    names = [datasets] if isinstance(datasets, str) else list(datasets)
    sets = [load_labelled(d, ctx.root, limit=limit, seed=seed) for d in names]
    points, accs = [], []
    for s in sets:
        for ref in refs:
            enc = ref.unnormalised()  # the embeddings of the kNN analysis (the paper's Table 2 accuracies on its maps)
            x = ctx.embed(enc, s.texts)
            acc = knn_accuracy(x, s.labels, k=k, metric=metric, seed=seed)
            xy = tsne_map(x, seed=seed, n_jobs=n_jobs, perplexity=perplexity)
            points.append(pd.DataFrame({"model": ref.label, "dataset": s.name, "x": xy[:, 0], "y": xy[:, 1], "label": s.labels}))
            accs.append({"model": ref.label, "dataset": s.name, "n": len(x), **acc, "normalized": is_normalised(enc)})
    frame, acc_frame = pd.concat(points, ignore_index=True), pd.DataFrame(accs)
    files = [write_csv(frame, out, "tsne"), write_csv(acc_frame, out, "tsne_knn")]
    with style.paper_style():
        fig = tsne_figure(frame, acc_frame, [r.label for r in refs], [s.name for s in sets])
        files += style.save(fig, out, "tsne")
    return AnalysisResult("tsne", {"tsne": frame, "tsne_knn": acc_frame}, files)


def tsne_figure(frame: pd.DataFrame, acc_frame: pd.DataFrame, models: list[str], datasets: list[str]):
    """Datasets as rows, models side by side; a point's colour is its class, named in a legend beside each
    row (up to :data:`MAX_LEGEND` classes: beyond that a legend would be taller than the maps)."""
    fig, axes = style.figure(ncols=len(models), nrows=len(datasets), width=2.3 * len(models) + 1.6, height=2.3 * len(datasets))
    for i, name in enumerate(datasets):
        rows = frame[frame["dataset"] == name]
        classes = sorted(set(rows["label"].astype(str)))
        colours = dict(zip(classes, style.class_palette(len(classes)), strict=True))
        for j, model in enumerate(models):
            ax = axes[i, j]
            g = rows[rows["model"] == model]
            ax.scatter(g["x"], g["y"], c=[colours[str(lab)] for lab in g["label"]], s=2, lw=0, rasterized=True)
            a = acc_frame[(acc_frame["model"] == model) & (acc_frame["dataset"] == name)].iloc[0]
            ax.text(0.02, 0.98, f"kNN {100 * a['accuracy']:.1f}%", transform=ax.transAxes, va="top", fontsize=7)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_aspect("equal", adjustable="datalim")
            for side in ("left", "bottom"):
                ax.spines[side].set_visible(False)
            if i == 0:
                ax.set_title(model)
            if j == 0:
                ax.set_ylabel(f"{name} ({len(classes)} classes)")
        if len(classes) <= MAX_LEGEND:
            from matplotlib.lines import Line2D

            handles = [Line2D([], [], ls="", marker="o", ms=4, color=colours[c], label=style.legend_label(c)) for c in classes]
            axes[i, -1].legend(handles=handles, loc="center left", bbox_to_anchor=(1.02, 0.5), title="class", title_fontsize=8,
                               ncol=1 if len(classes) <= 10 else 2, handletextpad=0.2, columnspacing=0.6)
    fig.tight_layout()
    return fig
