"""openTSNE maps of labelled sets, coloured by label, annotated with kNN accuracy (cropping paper Figure 2).

The paper uses openTSNE with its default parameters on the (mean-pooled) embeddings and prints
the kNN accuracy in the full embedding space on each map; embench does the same (on the kNN analysis'
non-normalised embeddings, unless ``--normalize``), with a seed
(``random_state``) and a seeded subset of ``limit`` points (default 5,000: t-SNE on a whole set
takes minutes per model on a laptop). The kNN accuracy is computed on the same points, with the kNN analysis' split
(9:1, stratified by label unless ``stratify=False``). The ``perplexity``
column is the one each map was drawn with: openTSNE lowers one too high for the number of points, and embench
warns when it did.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..report import style
from .base import AnalysisResult, analysis
from .inputs import is_normalised, write_csv
from .knn import check_split, knn_accuracy, load_labelled

MAX_LEGEND = 20  # classes named in a legend; beyond that no palette keeps them apart either


def tsne_map(x: np.ndarray, seed: int = 42, n_jobs: int = 1, **params) -> np.ndarray:
    """2-D openTSNE embedding of ``x`` (openTSNE defaults unless ``params`` says otherwise)."""
    return tsne_fit(x, seed, n_jobs, **params)[0]


def tsne_fit(x: np.ndarray, seed: int = 42, n_jobs: int = 1, **params) -> tuple[np.ndarray, float]:
    """(:func:`tsne_map`, the perplexity openTSNE used): it lowers one too high for the number of points (to about
    a third of them) and says so only in a log line, so the map's perplexity is read back rather than assumed."""
    from openTSNE import TSNE

    emb = TSNE(random_state=seed, n_jobs=n_jobs, **params).fit(np.asarray(x, dtype=np.float64))
    used = getattr(emb.affinities, "effective_perplexities_", None)
    asked = float(params.get("perplexity", 30.0))
    return np.asarray(emb), float(np.max(used)) if used is not None and len(used) else asked


# the maps need no split, the kNN accuracy printed on them does: how a user of tsne asks for an unstratified one
TSNE_ADVICE = "`embench analyze tsne --set stratify=false`, for the kNN accuracy printed on the maps"


@analysis("tsne", scores={"accuracy": "higher"})  # the kNN accuracy of tsne_knn
def tsne(refs, ctx, out, datasets: tuple = ("agnews",), limit: int | None = 5000, seed: int = 42, n_jobs: int = 1,
         k: int = 10, metric: str = "euclidean", perplexity: float = 30.0, stratify: bool = True) -> AnalysisResult:
    """One t-SNE map per (dataset, model): datasets as rows, models side by side."""
    names = [datasets] if isinstance(datasets, str) else list(datasets)
    sets = [load_labelled(d, ctx.root, limit=limit, seed=seed) for d in names]
    for s in sets:  # the kNN split of every set, before any model encodes
        check_split(s.labels, k, 0.1, seed, stratify, name=s.name, advice=TSNE_ADVICE)
    points, accs, lowered = [], [], set()
    for s in sets:
        for ref in refs:
            enc = ref.unnormalised()  # the embeddings of the kNN analysis (the paper's Table 2 accuracies on its maps)
            x = ctx.embed(enc, s.texts)
            acc = knn_accuracy(x, s.labels, k=k, metric=metric, seed=seed, stratify=stratify)
            xy, used = tsne_fit(x, seed=seed, n_jobs=n_jobs, perplexity=perplexity)
            if used != perplexity and s.name not in lowered:  # once per set: every model's map has its points
                lowered.add(s.name)
                warnings.warn(f"--set perplexity={perplexity:g}: the t-SNE maps of {s.name} ({len(x)} points) use perplexity "
                              f"{used:.4g}, the most openTSNE allows for that many points (the perplexity column says so)",
                              stacklevel=2)
            # the perplexity each map was drawn with, after the existing columns: runs of another perplexity differ here
            points.append(pd.DataFrame({"model": ref.label, "dataset": s.name, "x": xy[:, 0], "y": xy[:, 1], "label": s.labels,
                                        "perplexity": used}))
            accs.append({"model": ref.label, "dataset": s.name, "n": len(x), **acc, "normalized": is_normalised(enc),
                         "perplexity": used})
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
            knn_name = f"{a['k']}-NN, {a['metric']}" if "k" in a and "metric" in a else "kNN"
            ax.text(0.02, 0.98, f"{knn_name}: {100 * a['accuracy']:.1f}%", transform=ax.transAxes, va="top", fontsize=7)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_aspect("equal", adjustable="datalim")
            for side in ("left", "bottom"):
                ax.spines[side].set_visible(False)
            if i == 0:
                ax.set_title(model)
            if j == 0:
                used = sorted(set(rows["perplexity"])) if "perplexity" in rows else []
                ax.set_ylabel(f"{name} ({len(classes)} classes" + "".join(f", perplexity {p:.4g}" for p in used) + ")")
        if len(classes) <= MAX_LEGEND:
            from matplotlib.lines import Line2D

            handles = [Line2D([], [], ls="", marker="o", ms=4, color=colours[c], label=style.legend_label(c)) for c in classes]
            axes[i, -1].legend(handles=handles, loc="center left", bbox_to_anchor=(1.02, 0.5), title="class", title_fontsize=8,
                               ncol=1 if len(classes) <= 10 else 2, handletextpad=0.2, columnspacing=0.6)
    fig.tight_layout()
    return fig
