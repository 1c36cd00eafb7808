"""JTCSE's losses (Zong et al., "JTCSE", §IV, Eqs. 11-15), in the paper's form and the authors' code form.

Every function takes the vectors of BOTH dropout views of a batch of B sentences, stacked as 2B rows:
rows ``0..B-1`` are the first view (h), rows ``B..2B-1`` the second (h+). Row ``i`` and row
``i + B`` are the same sentence.

* :func:`tmc`: Eq. 13, the tensor-modulus constraint on a positive pair of pooler outputs, weighted by
  ``-log sim`` of the pair's [CLS] vectors ("dynamic complementary coefficient").
  - ``paper``: ``-log(max(cos, eps)) * ||p - p+|| / (||p|| + ||p+||)``. Eq. 13 is undefined for
    cos <= 0; the cosine is clamped at ``eps`` (1e-4, the code's constant; no gradient below it).
  - ``code`` (tianyuzong/JTCSE ``LTN_loss``): a negative cosine is replaced by the constant 1e-4
    (no gradient; a cosine in [0, 1e-4) is kept), and the ratio is halved.
* :func:`ictm`: Eq. 14, ``L_TMC(I -> II) + L_TMC(II -> I)``: the first view of one tower against the
  second view of the other.
* :func:`icnce`: Eq. 12, InfoNCE between the towers' [CLS] vectors and between the cross-attention
  streams' outputs, with the anchor tower chosen by the random ``R``.
  - ``paper``: ``L_NCE(h_A, h_B)`` on the first views (B x B, in-batch negatives, as Eq. 11).
  - ``code`` (``icnce``): a 2B x 2B similarity between tower A's rows and tower B's columns, the
    diagonal left out, the positive of row ``i`` the OTHER view of the same sentence in tower B.
* :func:`nce`: Eq. 11 within one tower: ``paper`` = SimCSE's B x B InfoNCE (first view against the
  second); ``code`` (``unsup_infonce_loss``) = 2B x 2B, every row an anchor, both views of every
  other sentence negatives.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .losses import info_nce

FORMS = ("paper", "code")
CODE_FLOOR = 1e-4  # the code's replacement for a negative cosine (LTN_loss)


def _check_form(form: str) -> None:
    if form not in FORMS:
        raise ValueError(f"form must be paper or code, got {form!r}")


def _views(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if x.shape[0] % 2:
        raise ValueError(f"expected 2B rows (two views of B sentences), got {x.shape[0]}")
    return x.chunk(2)


def tmc(cls_a: torch.Tensor, cls_b: torch.Tensor, pool_a: torch.Tensor, pool_b: torch.Tensor,
        form: str = "paper", eps: float = CODE_FLOOR) -> torch.Tensor:
    """Eq. 13 over positive pairs (row i of ``*_a`` with row i of ``*_b``), averaged over the pairs.

    ``cls_*`` are the [CLS] vectors of the last hidden state (the weight's cosine), ``pool_*`` the
    vectors whose moduli are aligned (the pooler outputs in the paper).
    """
    _check_form(form)
    cos = F.cosine_similarity(cls_a.float(), cls_b.float(), dim=-1)
    if form == "paper":
        cos = cos.clamp(min=eps)
    else:
        cos = torch.where(cos < 0, torch.full_like(cos, CODE_FLOOR), cos)
    pa, pb = pool_a.float(), pool_b.float()
    ratio = (pa - pb).norm(dim=-1) / (pa.norm(dim=-1) + pb.norm(dim=-1))  # Eq. 1
    if form == "code":
        ratio = ratio / 2.0
    return (-torch.log(cos) * ratio).mean()


def ictm(cls_1: torch.Tensor, cls_2: torch.Tensor, pool_1: torch.Tensor, pool_2: torch.Tensor,
         form: str = "paper") -> torch.Tensor:
    """Eq. 14: L_TMC(h_I, h_II+) + L_TMC(h_II, h_I+), each tower's first view against the other's second."""
    l1, l1p = _views(cls_1)
    l2, l2p = _views(cls_2)
    p1, p1p = _views(pool_1)
    p2, p2p = _views(pool_2)
    return tmc(l1, l2p, p1, p2p, form) + tmc(l2, l1p, p2, p1p, form)


def nce_2b(x: torch.Tensor, y: torch.Tensor, temperature: float) -> torch.Tensor:
    """The code's InfoNCE: row i of ``x`` against every row of ``y`` but row i; its positive is row
    ``i + B`` (mod 2B), the other view of the same sentence. ``x is y``: ``unsup_infonce_loss``."""
    n = x.shape[0]
    _views(x)
    sim = F.normalize(x.float(), dim=-1) @ F.normalize(y.float(), dim=-1).T
    sim = sim.masked_fill(torch.eye(n, dtype=torch.bool, device=x.device), float("-inf")) / temperature
    target = (torch.arange(n, device=x.device) + n // 2) % n
    return F.cross_entropy(sim, target)


def nce(x: torch.Tensor, temperature: float, form: str = "paper") -> torch.Tensor:
    """Eq. 11 within one tower (see the module docstring for the two forms)."""
    _check_form(form)
    if form == "code":
        return nce_2b(x, x, temperature)
    h, hp = _views(x)
    return info_nce(h, hp, temperature)


def icnce(cls_1: torch.Tensor, cls_2: torch.Tensor, cross_1: torch.Tensor | None, cross_2: torch.Tensor | None,
          anchor_first: bool, temperature: float, form: str = "paper") -> torch.Tensor:
    """Eq. 12. ``anchor_first`` is R = 1 (tower I supplies the anchors); R = 0 swaps the towers.
    ``cross_*`` are the last cross-attention layer's [CLS] outputs (c^O), or None without cross-attention."""
    _check_form(form)
    pairs = [(cls_1, cls_2)] + ([(cross_1, cross_2)] if cross_1 is not None and cross_2 is not None else [])
    total = cls_1.new_zeros((), dtype=torch.float32)
    for one, two in pairs:
        a, b = (one, two) if anchor_first else (two, one)
        if form == "code":
            total = total + nce_2b(a, b, temperature)
        else:
            total = total + info_nce(_views(a)[0], _views(b)[0], temperature)
    return total
