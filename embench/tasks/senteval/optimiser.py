"""torch.optim.Adam and RMSprop, step for step, on the stacked weights of many logistic regressions.

SentEval trains one ``nn.Linear`` per fit with torch's optimiser; :mod:`embench.tasks.senteval.classifier`
trains all fits of a task as one stacked tensor, so it needs the same update rules applied per fit.
"""

from __future__ import annotations

import torch

from ...core.errors import EmbenchError


class BatchedOptimiser:
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
