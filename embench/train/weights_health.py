"""Whether a training state is worth keeping: finite, not exploded, not collapsed.

A checkpoint is where a user resumes from, so a state is written only when its weights can be trained on:
every parameter finite and below ``EXPLODED`` in magnitude (with a huge learning rate the step before a NaN
already holds weights of 1e30 or 6e5). A contrastive loss that sits at ln(batch) with a zero gradient norm
means every in-batch similarity is equal (the encoder maps all texts to one point): ``CollapseWatch`` stops
such a run at the step it happens instead of training on for thousands of steps.
"""

from __future__ import annotations

import torch

EXPLODED = 1e5  # far above any trained transformer weight (LayerNorm gains and embeddings stay below ~1e3)
COLLAPSE_STEPS = 5  # consecutive steps at ln(batch) with no gradient before a run counts as collapsed


def weights_problem(model: torch.nn.Module) -> str | None:
    """Why ``model``'s weights are not worth a checkpoint (non-finite or exploded), or None."""
    largest, where = 0.0, ""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not torch.isfinite(p).all():
                return f"parameter {name} holds NaN or inf"
            m = float(p.detach().abs().max()) if p.numel() else 0.0
            if m > largest:
                largest, where = m, name
    if largest > EXPLODED:
        return f"parameter {where} reaches {largest:.3g} in magnitude (the weights have exploded)"
    return None


class CollapseWatch:
    """Counts consecutive steps with a zero gradient norm and an unchanged loss: nothing is being learnt
    (a collapsed contrastive encoder gives every in-batch similarity the same value, hence the loss ln(batch)
    of a uniform softmax, whatever the batch holds)."""

    def __init__(self, steps: int = COLLAPSE_STEPS, tol: float = 1e-6):
        self.steps, self.tol, self.run, self.last = steps, tol, 0, None

    def update(self, loss: float, grad_norm: float) -> bool:
        """True once the run has sat collapsed for ``steps`` steps in a row."""
        flat = self.last is not None and abs(loss - self.last) <= self.tol * max(1.0, abs(loss))
        self.run = self.run + 1 if grad_norm < 1e-12 and (flat or self.last is None) else 0
        self.last = loss
        return self.run >= self.steps
