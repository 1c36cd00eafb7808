"""Losses: InfoNCE with in-batch negatives, SimCSE's weighted hard negatives, the MLM auxiliary term.

* :func:`info_nce` is SimCSE Eq. 1/4/5/8 and the cropping paper's Eq. 1: cross-entropy over
  cos(anchor_i, candidate_j) / tau, where the candidates are every positive of the (global) batch,
  then, with hard negatives, every hard negative of the batch. The anchor's own hard negative is
  weighted by alpha (Eq. 8 read as alpha^{1[i=j]}, as the authors' code does: log(alpha) added to
  that logit), so alpha = 1 is Eq. 5.
* :func:`mlm_loss` is BERT's masked-LM cross-entropy (SimCSE App. D: loss + lambda * MLM).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def info_nce(
    anchors: torch.Tensor,
    positives: torch.Tensor,
    temperature: float = 0.05,
    hard_negatives: torch.Tensor | None = None,
    alpha: float = 1.0,
    offset: int = 0,
    exclude: torch.Tensor | None = None,
    masked_as: str = "remove",
    objective: str = "infonce",
) -> torch.Tensor:
    """Mean InfoNCE of ``anchors`` (n x d) against all ``positives`` (N x d) and ``hard_negatives``.

    Anchor ``i`` is row ``offset + i`` of the candidates: under DDP the anchors are one process's
    and the candidates are gathered from all processes (``offset`` = rank * n).

    ``exclude`` (bool, n x N, or n x 2N with hard negatives) marks candidates to leave out of the
    denominator: suspected false negatives (MultiCSR's filter, GISTEmbed's guide). An anchor's own
    positive is never left out. ``masked_as``: ``remove`` (logit -inf, MultiCSR Eq. 7) or ``zero`` (the
    logit multiplied by 0, so e^0 stays in the denominator: the MultiCSR authors' code). ``objective``:
    ``infonce`` (cross-entropy) or ``bce`` (the MultiCSR code's binary cross-entropy on the softmax).
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    a = F.normalize(anchors.float(), dim=-1)
    logits = a @ F.normalize(positives.float(), dim=-1).T / temperature
    n = a.shape[0]
    target = torch.arange(n, device=a.device) + offset
    if hard_negatives is not None:
        if alpha <= 0:
            raise ValueError(f"the hard-negative weight alpha must be positive, got {alpha}")
        hn = a @ F.normalize(hard_negatives.float(), dim=-1).T / temperature
        if alpha != 1.0:
            own = torch.zeros_like(hn)
            own[torch.arange(n, device=a.device), target] = math.log(alpha)
            hn = hn + own
        logits = torch.cat([logits, hn], dim=1)
    if exclude is not None:
        if exclude.shape != logits.shape:
            raise ValueError(f"the exclusion mask is {tuple(exclude.shape)}, the logits {tuple(logits.shape)}")
        keep_own = torch.zeros_like(exclude, dtype=torch.bool)
        keep_own[torch.arange(n, device=a.device), target] = True
        if masked_as not in ("remove", "zero"):
            raise ValueError(f"masked_as must be remove or zero, got {masked_as!r}")
        logits = logits.masked_fill(exclude.bool() & ~keep_own, float("-inf") if masked_as == "remove" else 0.0)
    if objective == "bce":
        from .false_negatives import softmax_bce

        return softmax_bce(logits, target)
    if objective != "infonce":
        raise ValueError(f"objective must be infonce or bce, got {objective!r}")
    return F.cross_entropy(logits, target)


def mlm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Masked-LM cross-entropy over the positions whose label is not -100 (B x T x V, B x T)."""
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)


def mask_tokens(
    input_ids: torch.Tensor,
    special_mask: torch.Tensor,
    mask_token_id: int,
    vocab_size: int,
    probability: float = 0.15,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masking: ``probability`` of the real tokens are predicted; of those 80% become [MASK],
    10% a random token, 10% stay. Returns (masked ids, labels with -100 where nothing is predicted)."""
    # elementwise selections, not boolean indexing: indexing by a mask counts its cells first, which on a GPU makes the
    # host wait for the device; the random draws are the same, in the same order
    prob = torch.full(input_ids.shape, probability, device=input_ids.device)
    prob.masked_fill_(special_mask.bool(), 0.0)
    chosen = torch.bernoulli(prob, generator=generator).bool()
    labels = input_ids.masked_fill(~chosen, -100)
    to_mask = torch.bernoulli(torch.full(input_ids.shape, 0.8, device=input_ids.device), generator=generator).bool() & chosen
    ids = input_ids.masked_fill(to_mask, mask_token_id)
    to_random = torch.bernoulli(torch.full(input_ids.shape, 0.5, device=input_ids.device), generator=generator).bool() & chosen & ~to_mask
    ids = torch.where(to_random, torch.randint(vocab_size, ids.shape, device=ids.device, generator=generator), ids)
    return ids, labels
