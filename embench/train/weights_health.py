"""Whether a training state is worth keeping: finite, not exploded, not collapsed.

A checkpoint is where a user resumes from, so a state is written only when its weights can be trained on:
every parameter finite and below ``EXPLODED`` in magnitude (with a huge learning rate the step before a NaN
already holds weights of 1e30 or 6e5). A contrastive loss that sits at ln(batch) with a zero gradient norm
means every in-batch similarity is equal (the encoder maps all texts to one point): ``CollapseWatch`` stops
such a run a few steps after it happens instead of training on for thousands of steps.
"""

from __future__ import annotations

import math

import torch

EXPLODED = 1e5  # far above any trained transformer weight (LayerNorm gains and embeddings stay below ~1e3)
COLLAPSE_STEPS = 5  # consecutive steps with no gradient before a run counts as collapsed
FLAT_GRADIENT = 1e-3  # a gradient norm below this moves no weight (healthy contrastive runs: 0.1 to 10)
UNIFORM_TOLERANCE = 0.01  # a loss this near ln(candidates) is a uniform softmax (ln 16 and ln 17 are 0.06 apart)


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
    """Counts consecutive steps whose gradient norm is below ``FLAT_GRADIENT``: nothing is being learnt. A
    collapsed contrastive encoder gives every in-batch similarity the same value, so its loss sits at the
    ln(candidates) of a uniform softmax and its gradient vanishes (MiniLM on crops at --lr 1e2: norms of 1e-5
    from step 2, where a healthy run has 0.1 to 10)."""

    def __init__(self, steps: int = COLLAPSE_STEPS):
        self.steps, self.run, self.pending = steps, 0, False

    def save_now(self, due: bool, last: bool) -> bool:
        """Whether to write the resume checkpoint after this step: one that falls ``due`` while the gradient is flat (a
        collapse may be starting) is held until a step has a gradient again, or to the ``last`` step; else a collapse
        declared at its fifth flat step would find the last good checkpoint overwritten by collapsed weights."""
        self.pending = self.pending or due or last
        if self.pending and (self.run == 0 or last):
            self.pending = False
            return True
        return False

    def update(self, loss: float, grad_norm: float) -> bool:  # noqa: ARG002 (the loss is named in the message)
        """True once the run has had no gradient for ``steps`` steps in a row."""
        self.run = self.run + 1 if grad_norm < FLAT_GRADIENT else 0
        return self.run >= self.steps

    def describe(self, loss: float, step: int, batch: int) -> str:
        """The stop's sentence. Every text on one vector is said only where the loss shows it: ln(candidates) of a
        uniform softmax, the ``batch`` in-batch candidates or twice as many with hard negatives. A flat loss
        elsewhere (3.1685 at batch 16 with --lr 30) is a gradient that vanished, said as that."""
        seen = (f"the run collapsed: the loss has stayed {loss:.4f} with a zero gradient norm for {self.run} steps up "
                f"to step {step}")
        uniform = next((n for n in (batch, 2 * batch) if math.isclose(loss, math.log(n), abs_tol=UNIFORM_TOLERANCE)), None)
        if uniform is not None:
            why = f"ln({uniform}), a uniform softmax over {uniform} in-batch candidates: every text gets the same vector"
        else:
            why = (f"not the ln({batch}) = {math.log(batch):.4f} of every text on the same vector: the gradient "
                   "vanished and nothing is learnt")
        return f"{seen} ({why}; a learning rate far too high does this)"
