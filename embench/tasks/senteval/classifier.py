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

The validation schemes that choose the penalty are in :mod:`embench.tasks.senteval.validation`; the
optimisers' update rules in :mod:`embench.tasks.senteval.optimiser`; the fits, their best models and
early stopping in :mod:`embench.tasks.senteval.fits`.

Batched training: every fit of a batch gets its own weights, optimiser state, data stream and
early-stopping state, so a batch gives the results of fitting its members one at a time (up to float
rounding). Fits that share data and stream (one fold, several L2 penalties) share each mini-batch.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ...core.errors import EmbenchError
from .fits import BestModels, Fit, FitResult
from .optimiser import BatchedOptimiser

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
    seed: int,
    device: torch.device,
    max_floats_per_chunk: int,
) -> list[list[FitResult]]:
    if not fits:
        return []
    Xt = (X if isinstance(X, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32))).to(device).float()
    yt = torch.as_tensor(np.asarray(y, dtype=np.int64), device=device)
    rngs, trains, devs = _fit_rows(fits, seed)
    best = BestModels(fits, Xt.shape[1], nclasses, seed, device)
    dev_idx, dev_mask = (torch.as_tensor(x, device=device) for x in _pad(devs))

    # Training state holds only the fits still training (compacted when whole fits finish).
    active = np.arange(len(fits))
    a = torch.as_tensor(active, device=device)
    opt = BatchedOptimiser(config.optim, best.W.clone(), best.b.clone(), best.wd)
    nepoch = 0
    while len(active) and nepoch <= config.max_epoch:
        for _ in range(config.epoch_size):
            _one_pass(opt, Xt, yt, [trains[j] for j in active], [rngs[j] for j in active], config.batch_size, nclasses)
        nepoch += config.epoch_size
        correct = _count_correct(Xt, yt, opt.W, opt.b, dev_idx[a], dev_mask[a], max_floats_per_chunk)
        keep = best.update(a, correct, opt, nepoch, config.tenacity)
        if not bool(keep.all()):
            keep_np = keep.cpu().numpy()
            active = active[keep_np]
            a = torch.as_tensor(active, device=device)
            opt.compact(keep)
    return best.results(fits, Xt, yt, devs)


def _fit_rows(fits: Sequence[Fit], seed: int) -> tuple[list[np.random.RandomState], list[np.ndarray], list[np.ndarray]]:
    """Per fit: its generator, its train and dev rows (validation_split draws first, as SentEval)."""
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
            held = f", {f.validation_split:.0%} of which are held out for it" if f.dev is None else ""
            raise EmbenchError(f"a fit has no dev rows ({len(train)} training rows{held}): too little data to early-stop on")
        rngs.append(rng)
        trains.append(train)
        devs.append(dev)
    return rngs, trains, devs


def _one_pass(opt: BatchedOptimiser, Xt: torch.Tensor, yt: torch.Tensor, trains: list[np.ndarray],
              rngs: list[np.random.RandomState], batch_size: int, nclasses: int) -> None:
    """One pass over the training rows of every active fit, each in its own permutation."""
    rows, mask = _pad([train[rng.permutation(len(train))] for train, rng in zip(trains, rngs, strict=True)])
    rows_t, mask_t = torch.as_tensor(rows, device=Xt.device), torch.as_tensor(mask, device=Xt.device)
    full = mask.all(axis=0)  # positions where every fit still has a row
    for s in range(0, rows.shape[1], batch_size):
        r_t = rows_t[:, s : s + batch_size]
        m = None if full[s : s + batch_size].all() else mask_t[:, s : s + batch_size]
        opt.step(Xt[r_t], yt[r_t], m, nclasses)


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
