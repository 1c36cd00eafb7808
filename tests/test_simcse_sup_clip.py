"""simcse-sup clips as the authors' 4-GPU run did: SimCSE's models.py gathers embeddings without gradient, so DDP
averages 1/4 of the exact gradient, and Trainer's max_grad_norm 1.0 on that is 4.0 on the exact one."""

from __future__ import annotations

import pytest
import torch

from embench.train.losses import info_nce
from embench.train.recipes import RECIPES


def _train(authors: bool, clip: float, ranks: int = 4, n: int = 4, d: int = 8) -> tuple[torch.Tensor, list[float]]:
    """Six AdamW steps of a linear encoder on SimCSE's supervised loss: exact gradients, or the authors' (each rank's
    loss over every gathered row, the gradient through its own rows only, averaged over ranks as DDP does)."""
    g = torch.Generator().manual_seed(0)
    lin = torch.nn.Linear(d, d)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(d, d, generator=g))
        lin.bias.zero_()
    opt = torch.optim.AdamW(lin.parameters(), lr=1e-2, weight_decay=0.0)  # Trainer's defaults: no weight decay
    norms = []
    for scale in (0.3, 1, 3, 0.5, 2, 1):  # batches whose gradient norms straddle the clip
        x1, x2, x3 = (torch.randn(ranks * n, d, generator=g) * scale for _ in range(3))
        opt.zero_grad()
        if not authors:
            info_nce(lin(x1), lin(x2), 0.05, hard_negatives=lin(x3)).backward()
        else:
            grads = []
            for p in range(ranks):
                own = slice(p * n, (p + 1) * n)
                z = [lin(x) for x in (x1, x2, x3)]  # z1_list[dist.get_rank()] = z1: only its own rows keep a gradient
                z = [torch.cat([zz[: p * n].detach(), zz[own], zz[(p + 1) * n :].detach()]) for zz in z]
                lin.zero_grad()
                info_nce(z[0], z[1], 0.05, hard_negatives=z[2]).backward()
                grads.append([q.grad.clone() for q in lin.parameters()])
            for q, *per_rank in zip(lin.parameters(), *grads, strict=True):
                q.grad = sum(per_rank) / ranks
        norms.append(float(torch.nn.utils.clip_grad_norm_(lin.parameters(), clip)))
        opt.step()
    return torch.cat([q.detach().flatten() for q in lin.parameters()]), norms


@pytest.mark.slow
def test_simcse_sup_clips_the_exact_gradient_at_4_which_trains_as_the_authors_did():
    assert RECIPES.get("simcse-sup").values["grad_clip"] == 4.0
    theirs, their_norms = _train(authors=True, clip=1.0)
    ours, our_norms = _train(authors=False, clip=4.0)
    assert [round(4 * a, 4) for a in their_norms] == [round(b, 4) for b in our_norms]  # 1/4 of the exact gradient
    assert max(our_norms) > 4 > min(our_norms)  # the clip acted on some steps, not on others
    assert (theirs - ours).abs().max() < 1e-6
    at_one, _ = _train(authors=False, clip=1.0)  # Trainer's value read on the exact gradient trains otherwise
    assert (theirs - at_one).abs().max() > 1e-3
