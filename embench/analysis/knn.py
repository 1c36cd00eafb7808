"""kNN classification accuracy of embeddings (cropping paper, Table 2 and Table S3).

Definition (cropping paper §3.3.1): a k = 10 nearest-neighbour classifier (majority vote) in the
embedding space, Euclidean distance on non-normalised embeddings (a model whose pipeline ends in an L2
normalisation, such as all-MiniLM-L6-v2, is read before it unless ``--normalize`` is given; the
``normalized`` column says which), trained on 90% of a labelled set
and scored on the other 10%. The error bar is the binomial standard error sqrt(p (1 - p) / n) of the
accuracy p on n test points. Table S3 adds the cosine metric and "centred" and "whitened"
embeddings; the paper does not say how it whitens, so embench uses PCA whitening fitted on the
training split only (the test split never informs the transform).

Choices left open by the paper, with embench's defaults:

* the split is stratified by label (``stratify=True``; the authors' code splits without
  stratification, ``stratify=False`` reproduces that), seed 42 as in the authors' code;
* ``mode="split"`` pools the set's splits and splits 9:1 (Table 2); ``mode="train-test"`` fits on the
  set's own train split and scores its test split (Table S4);
* whitening drops directions whose training variance is below ``rtol`` times the largest (a
  rank-deficient covariance would otherwise blow noise up to unit variance).

Test points are classified in blocks of ``block_size`` rows, so a large set never needs the full
test x train distance matrix in memory.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..core.errors import EmbenchError
from ..report import style
from .base import AnalysisResult, analysis
from .inputs import is_normalised, write_csv
from .labelled import LABELLED, LabelledSet, labelled_files, load_labelled
from .option_values import METRICS, TRANSFORMS, check_values

__all__ = [
    "knn",
    "LABELLED", "METRICS", "TRANSFORMS", "LabelledSet", "binomial_stderr", "fit_transform", "knn_accuracy",
    "check_split", "labelled_files", "load_labelled", "split_indices",
]


def binomial_stderr(p: float, n: int) -> float:
    """sqrt(p (1 - p) / n): the cropping paper's error bar for an accuracy p on n test points."""
    return math.sqrt(p * (1.0 - p) / n) if n > 0 else float("nan")


KNN_ADVICE = ("`embench analyze knn --set stratify=false` (layers too); while training, `--eval-analysis "
              "knn:...,stratify=false`; knn_accuracy(..., stratify=False)")


def split_indices(y: np.ndarray, test_size: float, seed: int, stratify: bool = True,
                  advice: str = KNN_ADVICE) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) row indices of a seeded split, stratified by label when asked; ``advice``: how the caller's
    user asks for an unstratified split (the analysis that splits names its own option)."""
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(y))
    try:
        tr, te = train_test_split(idx, test_size=test_size, random_state=seed, stratify=y if stratify else None)
    except ValueError as e:
        raise EmbenchError(
            f"cannot make a {'stratified ' if stratify else ''}split with test_size={test_size} of {len(y)} labelled "
            f"examples: {e} (use more labelled examples, e.g. a larger limit; or an unstratified split: {advice})"
        ) from None
    return np.sort(tr), np.sort(te)


def check_split(y, k: int, test_size: float, seed: int, stratify: bool = True, test_mask=None, name: str = "",
                advice: str = KNN_ADVICE) -> None:
    """The split :func:`knn_accuracy` will make of labels ``y``, and ``k`` against its training points, checked
    before any model encodes: both depend on the labels only, and were said after the first model's vectors."""
    mask = None if test_mask is None else np.asarray(test_mask, dtype=bool)
    n_train = int((~mask).sum()) if mask is not None else len(split_indices(np.asarray(y), test_size, seed, stratify, advice)[0])
    if k > n_train:
        raise EmbenchError(f"--k {k} is larger than the {n_train} training points{f' of {name}' if name else ''} "
                           "(use a smaller k, or more labelled examples)")


def fit_transform(train: np.ndarray, test: np.ndarray, transform: str, rtol: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """Apply ``raw``, ``centred`` or ``whitened`` (PCA whitening), fitted on ``train`` only."""
    if transform not in TRANSFORMS:
        raise EmbenchError(f"invalid kNN transform {transform!r}; choose one of: {', '.join(TRANSFORMS)}")
    if transform == "raw":
        return train, test
    mean = train.mean(axis=0, dtype=np.float64)
    train_c = train - mean
    test_c = test - mean
    if transform == "centred":
        return train_c, test_c
    # Covariance eigenvectors from the SVD of the centred training matrix: Cov = V diag(s^2/(n-1)) V^T.
    _, s, vt = np.linalg.svd(train_c.astype(np.float64), full_matrices=False)
    var = s**2 / max(len(train) - 1, 1)
    keep = var > rtol * var.max()
    w = vt[keep].T / np.sqrt(var[keep])
    return train_c @ w, test_c @ w


def knn_accuracy(
    X: np.ndarray,
    y,
    k: int = 10,
    metric: str = "euclidean",
    transform: str = "raw",
    test_size: float = 0.1,
    seed: int = 42,
    *,
    stratify: bool = True,
    test_mask: np.ndarray | None = None,
    block_size: int = 2048,
    rtol: float = 1e-6,
) -> dict[str, Any]:
    """kNN accuracy of embeddings ``X`` (n x d) with labels ``y`` on a seeded 9:1 split.

    >>> r = knn_accuracy(X, labels)                      # doctest: +SKIP
    >>> r["accuracy"], r["stderr"], r["n_test"]          # doctest: +SKIP

    Returns ``accuracy``, ``stderr`` (binomial), ``n_train``, ``n_test``, ``n_classes``, and the
    settings used (``k``, ``metric``, ``transform``, ``test_size``, ``seed``, ``stratify``).
    ``test_mask`` (n booleans) gives the split instead: True rows are scored, the others are the
    neighbours (the cropping paper's train-on-train, test-on-test, Table S4).
    """
    from sklearn.neighbors import KNeighborsClassifier

    if metric not in METRICS:
        raise EmbenchError(f"invalid kNN metric {metric!r}; choose one of: {', '.join(METRICS)}")
    check_values("knn", {}, {"k": k, "test_size": test_size, "seed": seed}, where="knn_accuracy")  # before sklearn's words
    # float64 distances: in a near-collapsed space (a random model's unit vectors) neighbours differ in the 7th digit,
    # where float32 round-off reorders them, so Euclidean and cosine disagreed on unit vectors that rank alike (0.400
    # against 0.433); n x d float64 rows and sklearn's chunked distances stay small at analysis sizes.
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if y.ndim != 1:  # a string of labels is one label, not n of them
        raise EmbenchError(f"kNN needs a sequence of labels, one per row of X; got labels of shape {y.shape} "
                           "(a string is one label)")
    if X.ndim != 2 or len(X) != len(y):
        raise EmbenchError(f"kNN needs an n x d matrix and n labels; got X {X.shape} and {len(y)} labels")
    if not np.isfinite(X).all():
        raise EmbenchError("kNN: the embeddings contain NaN or inf")
    if test_mask is not None:
        test_mask = np.asarray(test_mask, dtype=bool)
        tr, te = np.flatnonzero(~test_mask), np.flatnonzero(test_mask)
        if len(test_mask) != len(y) or not len(tr) or not len(te):
            raise EmbenchError(f"kNN test_mask must mark some of the {len(y)} rows as test and some as train")
    else:
        tr, te = split_indices(y, test_size, seed, stratify)
    if k > len(tr):
        raise EmbenchError(f"k={k} is larger than the {len(tr)} training points")
    x_tr, x_te = fit_transform(X[tr], X[te], transform, rtol)
    clf = KNeighborsClassifier(n_neighbors=k, algorithm="brute", metric=metric).fit(x_tr, y[tr])
    correct = 0
    for b in range(0, len(te), block_size):
        correct += int((clf.predict(x_te[b : b + block_size]) == y[te[b : b + block_size]]).sum())
    acc = correct / len(te)
    return {
        "accuracy": acc,
        "stderr": binomial_stderr(acc, len(te)),
        "n_train": int(len(tr)),
        "n_test": int(len(te)),
        "n_classes": int(len(np.unique(y))),
        "k": k,
        "metric": metric,
        "transform": transform,
        "test_size": test_size,
        "seed": seed,
        "stratify": stratify if test_mask is None else None,
        "mode": "split" if test_mask is None else "train-test",
    }


# -- the ``knn`` analysis: several models x labelled sets of the data root ---------------------
@analysis("knn", scores={"accuracy": "higher"})
def knn(refs, ctx, out, datasets: tuple = ("twentynewsgroups", "banking77", "emotion", "agnews", "trec"), k: int = 10,
        metric: tuple = ("euclidean",), transform: tuple = ("raw",), test_size: float = 0.1, seed: int = 42,
        stratify: bool = True, limit: int | None = None, splits: tuple | None = None, mode: str = "split") -> AnalysisResult:
    """kNN accuracy (cropping paper Table 2 / S3) of every model on every labelled set, with binomial error bars.

    ``limit`` keeps a seeded random subset of each set (quick runs); ``splits`` restricts which
    splits are pooled (default: all the set has). ``mode="train-test"``: neighbours from the set's
    train split, scored on its test split (Table S4; ``limit`` then applies to each split)."""
    metrics = [metric] if isinstance(metric, str) else list(metric)
    transforms = [transform] if isinstance(transform, str) else list(transform)
    names = [datasets] if isinstance(datasets, str) else list(datasets)
    if mode not in ("split", "train-test"):
        raise EmbenchError(f"invalid kNN mode {mode!r}; choose split (9:1 of the pooled set) or train-test (Table S4)")
    masks: dict[str, np.ndarray | None] = {}
    if mode == "split":
        sets = [load_labelled(d, ctx.root, splits=list(splits) if splits else None, limit=limit, seed=seed) for d in names]
    else:
        sets = []
        for d in names:
            train, test = (load_labelled(d, ctx.root, splits=[s], limit=limit, seed=seed) for s in ("train", "test"))
            sets.append(LabelledSet(train.name, train.texts + test.texts, train.labels + test.labels, train.files + test.files))
            masks[train.name] = np.arange(len(sets[-1].texts)) >= len(train.texts)
    for s in sets:
        check_split(s.labels, k, test_size, seed, stratify, masks.get(s.name), s.name)
    rows = []
    for ref in refs:
        enc = ref.unnormalised()  # the paper's non-normalised embeddings, unless --normalize says otherwise
        for s in sets:
            x = ctx.embed(enc, s.texts)
            for m in metrics:
                for t in transforms:
                    r = knn_accuracy(x, s.labels, k=k, metric=m, transform=t, test_size=test_size, seed=seed, stratify=stratify,
                                     test_mask=masks.get(s.name))
                    rows.append({"model": ref.label, "dataset": s.name, **r, "normalized": is_normalised(enc)})
    frame = pd.DataFrame(rows)
    files = [write_csv(frame, out, "knn")]
    with style.paper_style():
        # metrics as rows, transforms as columns (Table S3's layout)
        fig, axes = style.figure(ncols=len(transforms), nrows=len(metrics), sharey=True,
                                 width=max(3.4, min(7.0, (0.35 * len(sets) * len(refs) + 0.6) * len(transforms))))
        colours = style.palette(len(refs))
        width = 0.8 / len(refs)
        for (r, m), (c, t) in ((rm, ct) for rm in enumerate(metrics) for ct in enumerate(transforms)):
            ax = axes[r, c]
            sub = frame[(frame["metric"] == m) & (frame["transform"] == t)]
            for j, ref in enumerate(refs):
                g = sub[sub["model"] == ref.label].set_index("dataset").loc[[s.name for s in sets]]
                xs = [i + (j - (len(refs) - 1) / 2) * width for i in range(len(sets))]
                ax.bar(xs, 100 * g["accuracy"], width, yerr=100 * g["stderr"], color=colours[j], label=style.legend_label(ref.label),
                       error_kw={"lw": 0.8, "capsize": 1.5})
            ax.set_xticks(range(len(sets)), [s.name for s in sets] if r == len(metrics) - 1 else [], rotation=30, ha="right")
            ax.set_title(f"{m}, {t}")  # short: three panels side by side must not overlap
            if c == 0:
                ax.set_ylabel(f"{k}-NN accuracy (%)")
        handles, names_ = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, names_, loc="upper center", ncol=len(refs), bbox_to_anchor=(0.5, 1.04))
        fig.tight_layout()
        files += style.save(fig, out, "knn")
    return AnalysisResult("knn", {"knn": frame}, files)
