"""The fits of SentEval's classifier: what one fit trains on (:class:`Fit`), what it gives (:class:`FitResult`),
and every fit's best model so far with its early stopping (:class:`BestModels`).

``BestModels`` keeps what SentEval's ``PyTorchClassifier.fit`` keeps (facebookresearch/SentEval
``senteval/tools/classifier.py``): the weights of the best dev accuracy (replaced on a strict improvement),
a count of non-improvements that is never reset, and the stop when a non-improvement finds the count
already at ``tenacity``. One row per fit, one column per L2 penalty, so
:func:`embench.tasks.senteval.classifier.train_fits` trains them all as one model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from .optimiser import BatchedOptimiser


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


def init_linear(dim: int, nclasses: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """nn.Linear's initial weights right after ``torch.manual_seed(seed)``, as SentEval builds them."""
    with torch.random.fork_rng(devices=[]):  # the caller's CPU RNG is restored after
        # the CPU generator alone: torch.manual_seed reseeds every CUDA device too, which fork_rng(devices=[]) does not
        # restore (a run on a GPU reseeded the caller's CUDA RNG); the weights are drawn on the CPU, so they are the same
        torch.default_generator.manual_seed(seed)
        lin = torch.nn.Linear(dim, nclasses)
    return lin.weight.detach().T.contiguous(), lin.bias.detach().clone()  # (dim, C), (C,)


class BestModels:
    """Every member's best weights so far and its early-stopping state; one row per fit, R penalties."""

    def __init__(self, fits: Sequence[Fit], dim: int, nclasses: int, seed: int, device: torch.device):
        J, R = len(fits), max(len(f.penalties) for f in fits)
        w0, b0 = init_linear(dim, nclasses, seed)
        self.wd = torch.zeros(J, R, device=device)
        self.done = torch.ones(J, R, dtype=torch.bool, device=device)  # padding members (R differs) start done
        for j, f in enumerate(fits):
            for r, p in enumerate(f.penalties):
                self.wd[j, r] = float(p)
                self.done[j, r] = False
        self.correct = torch.full((J, R), -1, dtype=torch.long, device=device)
        self.W = w0.to(device)[None, :, None, :].expand(J, dim, R, nclasses).contiguous()  # (J, dim, R, C)
        self.b = b0.to(device).expand(J, R, nclasses).clone()
        self.epochs = torch.zeros(J, R, dtype=torch.long, device=device)
        self.stop_count = torch.zeros(J, R, dtype=torch.long, device=device)

    def update(self, a: torch.Tensor, correct: torch.Tensor, opt: BatchedOptimiser, nepoch: int, tenacity: int) -> torch.Tensor:
        """Keep strict improvements, count the rest; returns which active fits still train."""
        live = ~self.done[a]
        improved = (correct > self.correct[a]) & live
        self.correct[a] = torch.where(improved, correct, self.correct[a])
        if improved.any():
            ii, rr = improved.nonzero(as_tuple=True)
            self.W[a[ii], :, rr] = opt.W[ii, :, rr]
            self.b[a[ii], rr] = opt.b[ii, rr]
        worse = live & ~improved
        stops = worse & (self.stop_count[a] >= tenacity)
        self.stop_count[a] = self.stop_count[a] + worse.long()
        self.epochs[a] = torch.where(live, torch.full_like(self.epochs[a], nepoch), self.epochs[a])
        self.done[a] = self.done[a] | stops
        return ~self.done[a].all(dim=1)

    def results(self, fits: Sequence[Fit], Xt: torch.Tensor, yt: torch.Tensor, devs: list[np.ndarray]) -> list[list[FitResult]]:
        """Score the best models: dev accuracy and every extra row set."""
        results: list[list[FitResult]] = []
        for j, f in enumerate(fits):
            out = []
            for r, p in enumerate(f.penalties):
                evals, preds = {}, {}
                for name, rows in f.evals.items():
                    rows_t = torch.as_tensor(np.asarray(rows, dtype=np.int64), device=Xt.device)
                    pred = (Xt[rows_t] @ self.W[j, :, r] + self.b[j, r]).argmax(dim=1)
                    preds[name] = pred.cpu().numpy()
                    evals[name] = float((pred == yt[rows_t]).float().mean().item()) if len(rows) else float("nan")
                out.append(FitResult(
                    penalty=float(p),
                    dev_acc=float(self.correct[j, r].item()) / len(devs[j]),
                    epochs=int(self.epochs[j, r].item()),
                    evals=evals,
                    predictions=preds,
                ))
            results.append(out)
        return results
