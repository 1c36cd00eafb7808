"""SentEval's validation schemes (``senteval/tools/validation.py``) on top of the batched classifier.

Nested k-fold (MR, CR, SUBJ, MPQA), k-fold on train then test (TREC, MRPC), train/dev/test (SST,
SICK-E): each chooses the L2 penalty from :data:`~embench.tasks.senteval.classifier.PENALTIES` the way
SentEval does, including its rounding of accuracies to two decimals of a percentage.
"""

from __future__ import annotations

import numpy as np

from ...core.errors import EmbenchError
from .classifier import PENALTIES, ClassifierConfig, Fit, check_labels, train_many


def _train_many(what: str, *args) -> list:
    """:func:`train_many`, its errors (too few rows to hold any out for early stopping) saying which task's fits."""
    try:
        return train_many(*args)
    except EmbenchError as e:
        raise EmbenchError(f"{what}: {e}") from None


def _senteval_pct(x: float) -> float:
    """SentEval rounds every accuracy to two decimals of a percentage before comparing or averaging."""
    return round(100 * float(x), 2)


def _stratified_folds(y: np.ndarray, k: int, random_state: int, what: str) -> list[tuple[np.ndarray, np.ndarray]]:
    from sklearn.model_selection import StratifiedKFold

    counts = np.bincount(y)
    counts = counts[counts > 0]
    if len(counts) < 2:
        raise EmbenchError(f"{what}: a single class ({np.unique(y).tolist()}); a classifier needs at least two")
    if counts.min() < k:
        raise EmbenchError(
            f"{what}: {k}-fold cross-validation needs at least {k} examples of every class; "
            f"the smallest class has {int(counts.min())}"
        )
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=random_state)
    return list(skf.split(np.zeros(len(y)), y))


def nested_cv(X, y, nclasses: int, config: ClassifierConfig, seed: int = 1111, device=None, batched: bool = True, what: str = "task") -> dict:
    """SentEval ``InnerKFoldClassifier`` (MR, CR, SUBJ, MPQA): k outer folds; in each, an inner k-fold
    over the training part chooses the L2 penalty, then a fit on the whole training part (5% held out
    for early stopping) is tested on the outer fold. Both fold splits use random_state 1111, hard-coded
    in SentEval whatever the seed; the classifier uses ``seed``.
    """
    X, y = np.asarray(X, dtype=np.float32), np.asarray(y, dtype=np.int64)
    k = config.kfold
    outer = _stratified_folds(y, k, 1111, what)
    inner_fits, inner_of = [], []
    for o, (tr, _) in enumerate(outer):
        for itr, ite in _stratified_folds(y[tr], k, 1111, f"{what} (outer fold {o + 1})"):
            inner_fits.append(Fit(train=tr[itr], dev=tr[ite], penalties=PENALTIES))
            inner_of.append(o)
    inner = _train_many(what, X, y, inner_fits, config, nclasses, seed, device, batched)
    folds = []
    for o in range(k):
        accs = np.array([[r.dev_acc for r in res] for res, oo in zip(inner, inner_of, strict=True) if oo == o])
        scores = [_senteval_pct(np.mean(accs[:, r])) for r in range(len(PENALTIES))]
        best = int(np.argmax(scores))
        folds.append({"penalty": PENALTIES[best], "dev_acc": scores[best] / 100, "penalty_scores": dict(zip(map(str, PENALTIES), [s / 100 for s in scores], strict=True))})
    final_fits = [
        Fit(train=tr, penalties=[folds[o]["penalty"]], validation_split=0.05, evals={"test": te})
        for o, (tr, te) in enumerate(outer)
    ]
    final = _train_many(what, X, y, final_fits, config, nclasses, seed, device, batched)
    predictions = np.empty(len(y), dtype=np.int64)  # out-of-fold: every example is tested once
    for o, res in enumerate(final):
        predictions[outer[o][1]] = res[0].predictions["test"]
        folds[o]["test_acc"] = _senteval_pct(res[0].evals["test"]) / 100
        folds[o]["test_acc_exact"] = res[0].evals["test"]
        folds[o]["epochs"] = res[0].epochs
    dev = round(float(np.mean([100 * f["dev_acc"] for f in folds])), 2) / 100
    test = round(float(np.mean([100 * f["test_acc"] for f in folds])), 2) / 100
    return {
        "scheme": "nested-kfold", "kfold": k, "test_acc": test, "dev_acc": dev,
        "test_acc_exact": float(np.mean([f["test_acc_exact"] for f in folds])),
        "folds": folds, "n": int(len(y)), "predictions": predictions,
    }


def kfold_then_test(Xtr, ytr, Xte, yte, nclasses: int, config: ClassifierConfig, seed: int = 1111, device=None, batched: bool = True, what: str = "task") -> dict:
    """SentEval ``KFoldClassifier`` (TREC, MRPC): k-fold CV on train (random_state = seed) chooses the
    penalty by mean fold accuracy; a fit on all of train (5% held out for early stopping) is tested.
    """
    Xtr, ytr = np.asarray(Xtr, dtype=np.float32), np.asarray(ytr, dtype=np.int64)
    Xte, yte = np.asarray(Xte, dtype=np.float32), np.asarray(yte, dtype=np.int64)
    X, y = np.concatenate([Xtr, Xte]), np.concatenate([ytr, yte])
    test_rows = np.arange(len(ytr), len(y))
    folds = _stratified_folds(ytr, config.kfold, seed, what)
    cv = _train_many(what, X, y, [Fit(train=tr, dev=te, penalties=PENALTIES) for tr, te in folds], config, nclasses, seed, device, batched)
    accs = np.array([[r.dev_acc for r in res] for res in cv])  # (k, penalties)
    scores = [_senteval_pct(np.mean(accs[:, r])) for r in range(len(PENALTIES))]
    best = int(np.argmax(scores))
    final = _train_many(
        what, X, y, [Fit(train=np.arange(len(ytr)), penalties=[PENALTIES[best]], validation_split=0.05, evals={"test": test_rows})],
        config, nclasses, seed, device, batched,
    )[0][0]
    return {
        "scheme": "kfold-then-test", "kfold": config.kfold, "penalty": PENALTIES[best],
        "test_acc": _senteval_pct(final.evals["test"]) / 100, "test_acc_exact": final.evals["test"],
        "dev_acc": scores[best] / 100,
        "penalty_scores": dict(zip(map(str, PENALTIES), [s / 100 for s in scores], strict=True)),
        "fold_accs": {str(p): accs[:, r].tolist() for r, p in enumerate(PENALTIES)},
        "epochs": final.epochs, "predictions": final.predictions["test"], "n_train": int(len(ytr)), "n_test": int(len(yte)),
    }


def train_dev_test(Xtr, ytr, Xdev, ydev, Xte, yte, nclasses: int, config: ClassifierConfig, seed: int = 1111, device=None, batched: bool = True, what: str = "task") -> dict:
    """SentEval ``SplitClassifier`` (SST-2, SST-5, SICK-E): one fit per penalty, early-stopped and scored
    on dev; the best dev score (first on ties) chooses the model tested. SentEval refits that penalty
    with the same seed, which trains the same model, so the fit already made is tested instead.
    """
    parts = [np.asarray(a, dtype=np.float32) for a in (Xtr, Xdev, Xte)]
    labels = [np.asarray(a, dtype=np.int64) for a in (ytr, ydev, yte)]
    check_labels(labels[0], nclasses, f"{what} (train split)")
    X, y = np.concatenate(parts), np.concatenate(labels)
    n1, n2 = len(labels[0]), len(labels[0]) + len(labels[1])
    fit = Fit(train=np.arange(n1), dev=np.arange(n1, n2), penalties=PENALTIES, evals={"test": np.arange(n2, len(y))})
    res = _train_many(what, X, y, [fit], config, nclasses, seed, device, batched)[0]
    scores = [_senteval_pct(r.dev_acc) for r in res]
    best = int(np.argmax(scores))
    return {
        "scheme": "train-dev-test", "penalty": PENALTIES[best], "dev_acc": scores[best] / 100,
        "test_acc": _senteval_pct(res[best].evals["test"]) / 100, "test_acc_exact": res[best].evals["test"],
        "penalty_scores": dict(zip(map(str, PENALTIES), [s / 100 for s in scores], strict=True)),
        "epochs": res[best].epochs, "n_train": n1, "n_dev": n2 - n1, "n_test": int(len(y) - n2),
        "predictions": res[best].predictions["test"],
    }
