"""JTCSE's losses (Eqs. 11-15) against hand computations on small tensors, paper and code forms."""

from __future__ import annotations

import math

import pytest
import torch

from embench.train import jtcse_losses as J


def _cos(u, v):
    u, v = [float(x) for x in u], [float(x) for x in v]
    return sum(a * b for a, b in zip(u, v, strict=True)) / (math.sqrt(sum(a * a for a in u)) * math.sqrt(sum(b * b for b in v)))


def _norm(u):
    return math.sqrt(sum(float(x) ** 2 for x in u))


def _ratio(p, q):  # Eq. 1
    return _norm([a - b for a, b in zip(p, q, strict=True)]) / (_norm(p) + _norm(q))


def _infonce_row(anchor, cands, pos, tau, skip=None):
    logits = [_cos(anchor, c) / tau for j, c in enumerate(cands) if j != skip]
    keep = [j for j in range(len(cands)) if j != skip]
    return -(logits[keep.index(pos)] - math.log(sum(math.exp(x) for x in logits)))


@pytest.fixture
def towers():
    g = torch.Generator().manual_seed(0)
    # B = 3 sentences, two views each (2B = 6 rows), d = 4; one pair made to have a negative cosine
    c1, c2, p1, p2 = (torch.randn(6, 4, generator=g) for _ in range(4))
    c2[3] = -c1[0]  # cos(h_I[0], h_II+[0]) = -1: the clamp / the code's 1e-4 replacement
    return c1, c2, p1, p2


def test_tmc_of_equal_norms_and_directions_is_zero():
    h = torch.tensor([[1.0, 2.0, 3.0]])
    assert float(J.tmc(h, h, h, h)) == pytest.approx(0.0, abs=1e-7)


def test_tmc_eq5_closed_form():
    # Eq. 5: with |h+| = k|h| and cos = t, the ratio is sqrt(1 + k^2 - 2kt) / (1 + k)
    k, t = 2.5, 0.6
    h = torch.tensor([[1.0, 0.0]])
    hp = k * torch.tensor([[t, math.sqrt(1 - t * t)]])
    expected = -math.log(t) * math.sqrt(1 + k * k - 2 * k * t) / (1 + k)
    assert float(J.tmc(h, hp, h, hp)) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("form", ["paper", "code"])
def test_ictm_equals_hand_computation(towers, form):
    c1, c2, p1, p2 = towers
    B = 3

    def tmc_hand(la, lb, pa, pb):
        s = _cos(la, lb)
        if form == "paper":
            s = max(s, 1e-4)
        elif s < 0:
            s = 1e-4
        r = _ratio(pa, pb) / (2.0 if form == "code" else 1.0)
        return -math.log(s) * r

    one = sum(tmc_hand(c1[i], c2[B + i], p1[i], p2[B + i]) for i in range(B)) / B  # I -> II
    two = sum(tmc_hand(c2[i], c1[B + i], p2[i], p1[B + i]) for i in range(B)) / B  # II -> I
    assert float(J.ictm(c1, c2, p1, p2, form)) == pytest.approx(one + two, rel=1e-5)


def test_code_form_keeps_a_small_positive_cosine_and_gives_no_gradient_below_zero():
    la = torch.tensor([[1.0, 0.0]], requires_grad=True)
    lb = torch.tensor([[-1.0, 0.1]])
    p = torch.tensor([[1.0, 1.0]])
    J.tmc(la, lb, p, 2 * p, "code").backward()
    assert torch.all(la.grad == 0)  # cos < 0: a constant 1e-4, as in LTN_loss


@pytest.mark.parametrize("form", ["paper", "code"])
def test_nce_equals_hand_computation(towers, form):
    x = towers[0]
    B, tau = 3, 0.05
    if form == "paper":  # SimCSE: h_i against every h+_j
        hand = sum(_infonce_row(x[i], x[B:], i, tau) for i in range(B)) / B
    else:  # every row an anchor, its own row left out, the other view the positive
        hand = sum(_infonce_row(x[i], x, (i + B) % (2 * B), tau, skip=i) for i in range(2 * B)) / (2 * B)
    assert float(J.nce(x, tau, form)) == pytest.approx(hand, rel=1e-5)


@pytest.mark.parametrize("form", ["paper", "code"])
@pytest.mark.parametrize("anchor_first", [True, False])
def test_icnce_equals_hand_computation(towers, form, anchor_first):
    c1, c2, x1, x2 = towers
    B, tau = 3, 0.05

    def term(a, b):
        if form == "paper":  # Eq. 12 as printed: L_NCE(h_A^L, h_B^L), first views
            return sum(_infonce_row(a[i], b[:B], i, tau) for i in range(B)) / B
        return sum(_infonce_row(a[i], b, (i + B) % (2 * B), tau, skip=i) for i in range(2 * B)) / (2 * B)

    hand = term(c1, c2) + term(x1, x2) if anchor_first else term(c2, c1) + term(x2, x1)
    got = J.icnce(c1, c2, x1, x2, anchor_first, tau, form)
    assert float(got) == pytest.approx(hand, rel=1e-5)
    # without cross-attention only the [CLS] term is left
    only = J.icnce(c1, c2, None, None, anchor_first, tau, form)
    assert float(only) == pytest.approx(term(c1, c2) if anchor_first else term(c2, c1), rel=1e-5)


def test_forms_are_checked():
    x = torch.ones(2, 3)
    with pytest.raises(ValueError, match="paper or code"):
        J.nce(x, 0.05, "papr")
    with pytest.raises(ValueError, match="2B rows"):
        J.nce(torch.ones(3, 3), 0.05)
