"""SentEval's logistic regression on frozen embeddings, in PyTorch, many fits trained as one model.

Follows facebookresearch/SentEval ``senteval/tools/classifier.py`` (``MLP`` with ``nhid=0``) and
``senteval/tools/validation.py`` exactly, except that it runs wherever torch runs (CUDA when present,
CPU otherwise) and that fits which share a schedule are trained at once:

* a fit is ``nn.Linear(dim, nclasses)`` initialised after ``torch.manual_seed(seed)``, trained with
  cross-entropy (mean over the mini-batch: SentEval sets ``loss_fn.size_average = False`` after
  construction, which PyTorch >= 1.0 ignores) and the optimiser's own L2 ``weight_decay`` on weight
  and bias, with torch's default hyper-parameters (Adam lr 1e-3; RMSprop lr 1e-2, alpha 0.99);
* mini-batches follow ``np.random.permutation`` of a NumPy generator seeded with ``seed`` at
  construction (SentEval's ``np.random.seed(seed)``); ``validation_split`` takes its permutation
  first from the same stream;
* one "epoch" is ``epoch_size`` passes; after each, dev accuracy is measured; the best model is kept
  on a strict improvement; every non-improvement counts (the count is never reset) and training
  stops at the one that finds the count already at ``tenacity``; at most ``max_epoch`` (200) passes.

Batched training: every fit of a batch gets its own weights, optimiser state, data stream and
early-stopping state, so a batch gives the results of fitting its members one at a time (up to float
rounding). Fits that share data and stream (one fold, several L2 penalties) share each mini-batch.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from .core.errors import EmbenchError

PENALTIES = (1e-5, 1e-4, 1e-3, 1e-2)  # SentEval's grid for its PyTorch classifier: 10**t, t = -5..-2


@dataclass(frozen=True)
class ClassifierConfig:
    """SentEval's ``params['classifier']`` plus ``kfold`` (SimCSE's ``test`` and ``fasttest``)."""

    name: str
    kfold: int
    optim: str
    batch_size: int
    tenacity: int
    epoch_size: int
    max_epoch: int = 200


CONFIGS = {
    "default": ClassifierConfig("default", kfold=10, optim="adam", batch_size=64, tenacity=5, epoch_size=4),
    "prototyping": ClassifierConfig("prototyping", kfold=5, optim="rmsprop", batch_size=128, tenacity=3, epoch_size=2),
}


def get_config(name: str) -> ClassifierConfig:
    if name not in CONFIGS:
        raise EmbenchError(f"unknown classifier config {name!r}; choose one of: {', '.join(CONFIGS)}")
    return CONFIGS[name]


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class Fit:
    """One training run: rows of the pooled matrix to train on, rows to early-stop on, penalties.

    ``dev`` is either an index array (SentEval's ``validation_data``) or ``None`` with
    ``validation_split`` set (SentEval's ``validation_split``: the first ``int(split * n)`` rows of a
    seeded permutation of ``train`` become the dev rows). ``evals`` are extra row sets scored with the
    best model. ``penalties`` are the L2 values trained on this data (one member each).
    """

    train: np.ndarray
    penalties: Sequence[float]
    dev: np.ndarray | None = None
    validation_split: float | None = None
    evals: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class FitResult:
    penalty: float
    dev_acc: float  # best dev accuracy (fraction)
    epochs: int  # passes over the training rows
    evals: dict[str, float]  # accuracy per eval set
    predictions: dict[str, np.ndarray]


def check_labels(y: np.ndarray, nclasses: int, what: str) -> None:
    """A clear error for a split the optimiser cannot learn from (SentEval would just run on)."""
    present = np.unique(y)
    if len(present) < 2:
        raise EmbenchError(
            f"{what}: the training rows hold a single class ({present.tolist()}); "
            "a classifier needs at least two classes"
        )
    if present.min() < 0 or present.max() >= nclasses:
        raise EmbenchError(f"{what}: labels {present.tolist()} outside 0..{nclasses - 1}")


def _init_linear(dim: int, nclasses: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """nn.Linear's initial weights right after ``torch.manual_seed(seed)``, as SentEval builds them."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        lin = torch.nn.Linear(dim, nclasses)
    return lin.weight.detach().T.contiguous(), lin.bias.detach().clone()  # (dim, C), (C,)


def _pad(rows: list[np.ndarray], fill: int = 0) -> tuple[np.ndarray, np.ndarray]:
    n = max((len(r) for r in rows), default=0)
    out = np.full((len(rows), n), fill, dtype=np.int64)
    mask = np.zeros((len(rows), n), dtype=bool)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
        mask[i, : len(r)] = True
    return out, mask


class _fit_threads:
    """On CPU, train with one torch thread: the per-step tensors are small, and on a shared machine
    several intra-op threads spin against each other (measured: 6x slower with 2 threads on 2 busy
    cores). ``EMBENCH_FIT_THREADS`` overrides."""

    def __init__(self, device: torch.device):
        self.device = device

    def __enter__(self):
        self.before = torch.get_num_threads()
        if self.device.type == "cpu":
            torch.set_num_threads(int(os.environ.get("EMBENCH_FIT_THREADS", "1")))

    def __exit__(self, *exc):
        torch.set_num_threads(self.before)
        return False


def train_fits(
    X: np.ndarray | torch.Tensor,
    y: np.ndarray,
    fits: Sequence[Fit],
    config: ClassifierConfig,
    nclasses: int,
    seed: int = 1111,
    device: torch.device | str | None = None,
    max_floats_per_chunk: int = 1 << 24,
) -> list[list[FitResult]]:
    """Train every (fit, penalty) member at once; results per fit, in penalty order.

    ``X`` is the pooled feature matrix every fit indexes into; ``y`` its labels (0..nclasses-1).
    """
    device = torch.device(device) if device is not None else default_device()
    with _fit_threads(device):
        return _train_fits(X, y, fits, config, nclasses, seed, device, max_floats_per_chunk)


def _train_fits(
    X: np.ndarray | torch.Tensor,
    y: np.ndarray,
    fits: Sequence[Fit],
    config: ClassifierConfig,
    nclasses: int,
    seed: int = 1111,
    device: torch.device | str | None = None,
    max_floats_per_chunk: int = 1 << 24,
) -> list[list[FitResult]]:
    if not fits:
        return []
    Xt = (X if isinstance(X, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32))).to(device).float()
    yt = torch.as_tensor(np.asarray(y, dtype=np.int64), device=device)
    dim = Xt.shape[1]
    R = max(len(f.penalties) for f in fits)
    J = len(fits)
    bs = config.batch_size

    # Per fit: its generator, its train and dev rows (validation_split draws first, as SentEval).
    rngs, trains, devs = [], [], []
    for f in fits:
        rng = np.random.RandomState(seed)
        train = np.asarray(f.train, dtype=np.int64)
        if f.dev is None:
            if not f.validation_split:
                raise ValueError("a Fit needs dev rows or a validation_split")
            perm = rng.permutation(len(train))
            k = int(f.validation_split * len(train))
            dev, train = train[perm[:k]], train[perm[k:]]
        else:
            dev = np.asarray(f.dev, dtype=np.int64)
        if len(dev) == 0:
            raise EmbenchError(f"a fit has no dev rows ({len(train)} training rows): too little data to early-stop on")
        rngs.append(rng)
        trains.append(train)
        devs.append(dev)

    w0, b0 = _init_linear(dim, nclasses, seed)
    wd = torch.zeros(J, R, device=device)
    done_all = torch.ones(J, R, dtype=torch.bool, device=device)  # padding members (R differs) start done
    for j, f in enumerate(fits):
        for r, p in enumerate(f.penalties):
            wd[j, r] = float(p)
            done_all[j, r] = False
    dev_idx, dev_mask = _pad(devs)
    dev_idx_t = torch.as_tensor(dev_idx, device=device)
    dev_mask_t = torch.as_tensor(dev_mask, device=device)
    # Results, one row per fit; written when a fit's members improve.
    best_correct = torch.full((J, R), -1, dtype=torch.long, device=device)
    best_W = w0.to(device)[None, :, None, :].expand(J, dim, R, nclasses).contiguous()  # (J, dim, R, C)
    best_b = b0.to(device).expand(J, R, nclasses).clone()
    epochs = torch.zeros(J, R, dtype=torch.long, device=device)
    stop_count = torch.zeros(J, R, dtype=torch.long, device=device)

    # Training state holds only the fits still training (compacted when whole fits finish).
    active = np.arange(J)
    a = torch.as_tensor(active, device=device)
    opt = _Optimiser(config.optim, best_W.clone(), best_b.clone(), wd)
    nepoch = 0
    while len(active) and nepoch <= config.max_epoch:
        for _ in range(config.epoch_size):
            rows, mask = _pad([trains[j][rngs[j].permutation(len(trains[j]))] for j in active])
            rows_t, mask_t = torch.as_tensor(rows, device=device), torch.as_tensor(mask, device=device)
            full = mask.all(axis=0)  # positions where every fit still has a row
            for s in range(0, rows.shape[1], bs):
                r_t = rows_t[:, s : s + bs]
                m = None if full[s : s + bs].all() else mask_t[:, s : s + bs]
                opt.step(Xt[r_t], yt[r_t], m, nclasses)
        nepoch += config.epoch_size
        correct = _count_correct(Xt, yt, opt.W, opt.b, dev_idx_t[a], dev_mask_t[a], max_floats_per_chunk)
        live = ~done_all[a]
        improved = (correct > best_correct[a]) & live
        best_correct[a] = torch.where(improved, correct, best_correct[a])
        if improved.any():
            ii, rr = improved.nonzero(as_tuple=True)
            best_W[a[ii], :, rr] = opt.W[ii, :, rr]
            best_b[a[ii], rr] = opt.b[ii, rr]
        worse = live & ~improved
        stops = worse & (stop_count[a] >= config.tenacity)
        stop_count[a] = stop_count[a] + worse.long()
        epochs[a] = torch.where(live, torch.full_like(epochs[a], nepoch), epochs[a])
        done_all[a] = done_all[a] | stops
        keep = ~done_all[a].all(dim=1)
        if not bool(keep.all()):
            keep_np = keep.cpu().numpy()
            active = active[keep_np]
            a = torch.as_tensor(active, device=device)
            opt.compact(keep)

    # Score the best models: dev accuracy and every extra row set.
    results: list[list[FitResult]] = []
    for j, f in enumerate(fits):
        out = []
        for r, p in enumerate(f.penalties):
            evals, preds = {}, {}
            for name, rows in f.evals.items():
                rows_t = torch.as_tensor(np.asarray(rows, dtype=np.int64), device=device)
                pred = (Xt[rows_t] @ best_W[j, :, r] + best_b[j, r]).argmax(dim=1)
                preds[name] = pred.cpu().numpy()
                evals[name] = float((pred == yt[rows_t]).float().mean().item()) if len(rows) else float("nan")
            out.append(
                FitResult(
                    penalty=float(p),
                    dev_acc=float(best_correct[j, r].item()) / len(devs[j]),
                    epochs=int(epochs[j, r].item()),
                    evals=evals,
                    predictions=preds,
                )
            )
        results.append(out)
    return results


def _count_correct(X, y, W, b, idx, mask, max_floats_per_chunk) -> torch.Tensor:
    """Correct dev predictions per member: W (A, dim, R, C), idx/mask (A, n)."""
    A, n = idx.shape
    step = max(1, max_floats_per_chunk // max(1, n * X.shape[1]))
    out = []
    for s in range(0, A, step):
        xb = X[idx[s : s + step]]  # (a, n, dim)
        w = W[s : s + step]
        logits = (xb @ w.reshape(w.shape[0], w.shape[1], -1)).view(xb.shape[0], n, w.shape[2], w.shape[3])
        pred = (logits + b[s : s + step, None]).argmax(dim=-1)  # (a, n, R)
        ok = (pred == y[idx[s : s + step]][:, :, None]) & mask[s : s + step, :, None]
        out.append(ok.sum(dim=1))
    return torch.cat(out)


class _Optimiser:
    """torch.optim.Adam / RMSprop (default settings, coupled L2 ``weight_decay``) on batched weights.

    W (A, dim, R, C) and b (A, R, C) hold the fits still training; the R penalties of a fit share
    each mini-batch through one (B, dim) x (dim, R*C) product. Each fit keeps its own step
    count: a fit whose pass is over (it has fewer rows than the others) sits out the step, exactly as
    if it were trained alone.
    """

    def __init__(self, name: str, W: torch.Tensor, b: torch.Tensor, wd: torch.Tensor):
        if name not in ("adam", "rmsprop"):
            raise EmbenchError(f"optimiser {name!r} is not supported; SentEval's configs use adam or rmsprop")
        self.name, self.W, self.b = name, W, b
        self.wd = wd[:, None, :, None].clone()  # (A, 1, R, 1), broadcast on W (A, dim, R, C)
        self.t = torch.zeros(W.shape[0], dtype=torch.float64, device=W.device)
        self.v = [torch.zeros_like(W), torch.zeros_like(b)]
        self.m = [torch.zeros_like(W), torch.zeros_like(b)] if name == "adam" else None
        if name == "adam":
            self.lr, self.b1, self.b2, self.eps = 1e-3, 0.9, 0.999, 1e-8
        else:
            self.lr, self.alpha, self.eps = 1e-2, 0.99, 1e-8

    def compact(self, keep: torch.Tensor) -> None:
        self.W, self.b, self.wd, self.t = self.W[keep], self.b[keep], self.wd[keep], self.t[keep]
        self.v = [x[keep] for x in self.v]
        if self.m is not None:
            self.m = [x[keep] for x in self.m]

    def step(self, xb: torch.Tensor, yb: torch.Tensor, mask: torch.Tensor | None, nclasses: int) -> None:
        """One mini-batch step: xb (A, B, dim), yb (A, B); mask (A, B) marks real rows, None = all."""
        W, b = self.W, self.b
        A, dim, R, C = W.shape
        B = xb.shape[1]
        probs = torch.softmax((xb @ W.view(A, dim, R * C)).view(A, B, R, C) + b[:, None], dim=-1)  # (A, B, R, C)
        probs -= torch.nn.functional.one_hot(yb, nclasses).to(probs.dtype)[:, :, None]
        if mask is None:
            probs /= B  # mean over the mini-batch
            stepping = None
        else:
            count = mask.sum(dim=1)
            probs *= (mask / count.clamp(min=1)[:, None]).to(probs.dtype)[:, :, None, None]
            stepping = count > 0
        gW = (xb.transpose(1, 2) @ probs.view(A, B, R * C)).view(A, dim, R, C)
        grads = [gW + self.wd * W, probs.sum(dim=1) + self.wd[:, 0] * b]
        if stepping is None:
            self.t += 1
        else:
            self.t += stepping.double()
        if self.name == "adam":
            bc1 = (1 - self.b1**self.t).float()
            bc2_sqrt = (1 - self.b2**self.t).sqrt().float()
            for i, (p, g) in enumerate(zip((W, b), grads, strict=True)):
                shape = (-1,) + (1,) * (p.dim() - 1)
                m2 = self.m[i].lerp(g, 1 - self.b1)
                v2 = self.v[i] * self.b2 + (1 - self.b2) * g * g
                upd = (self.lr / bc1).view(shape) * m2 / (v2.sqrt() / bc2_sqrt.view(shape) + self.eps)
                if stepping is None:
                    self.m[i], self.v[i] = m2, v2
                    p -= upd
                else:
                    s = stepping.view(shape)
                    self.m[i] = torch.where(s, m2, self.m[i])
                    self.v[i] = torch.where(s, v2, self.v[i])
                    p -= torch.where(s, upd, torch.zeros_like(upd))
        else:
            for i, (p, g) in enumerate(zip((W, b), grads, strict=True)):
                shape = (-1,) + (1,) * (p.dim() - 1)
                v2 = self.v[i] * self.alpha + (1 - self.alpha) * g * g
                upd = self.lr * g / (v2.sqrt() + self.eps)
                if stepping is None:
                    self.v[i] = v2
                    p -= upd
                else:
                    s = stepping.view(shape)
                    self.v[i] = torch.where(s, v2, self.v[i])
                    p -= torch.where(s, upd, torch.zeros_like(upd))


# -- SentEval's validation schemes (senteval/tools/validation.py) -----------------------------
def train_many(X, y, fits: Sequence[Fit], config: ClassifierConfig, nclasses: int, seed: int, device=None, batched: bool = True) -> list[list[FitResult]]:
    """:func:`train_fits` on all fits at once, or (``batched=False``) one (fit, penalty) at a time."""
    if batched:
        return train_fits(X, y, fits, config, nclasses, seed, device)
    out = []
    for f in fits:
        row = []
        for p in f.penalties:
            single = Fit(train=f.train, penalties=[p], dev=f.dev, validation_split=f.validation_split, evals=f.evals)
            row.append(train_fits(X, y, [single], config, nclasses, seed, device)[0][0])
        out.append(row)
    return out


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
    inner = train_many(X, y, inner_fits, config, nclasses, seed, device, batched)
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
    final = train_many(X, y, final_fits, config, nclasses, seed, device, batched)
    for o, res in enumerate(final):
        folds[o]["test_acc"] = _senteval_pct(res[0].evals["test"]) / 100
        folds[o]["test_acc_exact"] = res[0].evals["test"]
        folds[o]["epochs"] = res[0].epochs
    dev = round(float(np.mean([100 * f["dev_acc"] for f in folds])), 2) / 100
    test = round(float(np.mean([100 * f["test_acc"] for f in folds])), 2) / 100
    return {
        "scheme": "nested-kfold", "kfold": k, "test_acc": test, "dev_acc": dev,
        "test_acc_exact": float(np.mean([f["test_acc_exact"] for f in folds])),
        "folds": folds, "n": int(len(y)),
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
    cv = train_many(X, y, [Fit(train=tr, dev=te, penalties=PENALTIES) for tr, te in folds], config, nclasses, seed, device, batched)
    accs = np.array([[r.dev_acc for r in res] for res in cv])  # (k, penalties)
    scores = [_senteval_pct(np.mean(accs[:, r])) for r in range(len(PENALTIES))]
    best = int(np.argmax(scores))
    final = train_many(
        X, y, [Fit(train=np.arange(len(ytr)), penalties=[PENALTIES[best]], validation_split=0.05, evals={"test": test_rows})],
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
    res = train_many(X, y, [fit], config, nclasses, seed, device, batched)[0]
    scores = [_senteval_pct(r.dev_acc) for r in res]
    best = int(np.argmax(scores))
    return {
        "scheme": "train-dev-test", "penalty": PENALTIES[best], "dev_acc": scores[best] / 100,
        "test_acc": _senteval_pct(res[best].evals["test"]) / 100, "test_acc_exact": res[best].evals["test"],
        "penalty_scores": dict(zip(map(str, PENALTIES), [s / 100 for s in scores], strict=True)),
        "epochs": res[best].epochs, "n_train": n1, "n_dev": n2 - n1, "n_test": int(len(y) - n2),
    }
