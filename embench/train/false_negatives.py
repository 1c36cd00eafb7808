"""MultiCSR stage 3 (Wang et al., 2024, §3.3): in-batch false negatives masked by a frozen encoder.

A frozen pre-trained sentence encoder P_eta (the "guide") scores, once per step, every anchor premise
against every positive and hard negative of the batch. A candidate it rates at or above sigma is a
suspected false negative (Eq. 6) and leaves the softmax denominator (Eq. 7); the anchor's own positive
and own hard negative are never masked ("x^k != x" in Eq. 6).

The guide is held by the training method, never by the module being trained: it is not in the
module's ``state_dict``, not in the optimiser, not in any saved checkpoint; it stays in eval mode
(no dropout) and is run without autograd. The authors' code (Circle-Ming/MultiCSR,
``simcse/models.py``) differs, and each difference is an option of ``sup-simcse`` named apart:

* ``fn_mask_variant: code``: the masked logits are multiplied by 0, so each still adds e^0 to the
  denominator (the paper removes them: -inf); the code compares with ``>`` where Eq. 6 has ``>=``.
* ``fn_loss: bce``: the code's loss is a binary cross-entropy on the softmax probabilities (one-hot
  target over the 2N candidates), not InfoNCE.
* ``fn_protect_hard: false``: the code protects only the own positive; the own hard negative can be
  masked.
* ``fn_guide_pooling: cls_before_pooler``: the code reads the guide's raw [CLS] state (``cl_forward`` with
  ``is_mask=True``: the ``cls`` pooler's ``last_hidden[:, 0]``, no MLP); the paper names the guide (a
  pre-trained SimCSE) but not its pooling, so by default the guide is pooled as it loads (its
  sentence-transformers config or catalogue row: ``cls_before_pooler`` for unsupervised SimCSE, mean
  for all-MiniLM-L6-v2, the pooler head for a plain BERT folder).
* Left out: the code's guide runs in train mode (dropout on) and is saved with the checkpoints as a
  submodule; both are what the issue asks embench not to do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

MASK_VARIANTS = ("paper", "code")
FN_LOSSES = ("infonce", "bce")


def false_negative_mask(guide_pos: torch.Tensor, guide_hard: torch.Tensor | None, sigma: float, offset: int = 0,
                        protect_hard: bool = True, strict: bool = False) -> torch.Tensor:
    """Which candidates leave the denominator (bool, n x N, or n x 2N with hard negatives; Eq. 6).

    ``guide_pos`` (n x N) and ``guide_hard`` (n x N) are the guide's cosines of each anchor to every
    positive and hard negative of the batch; anchor ``i`` is example ``offset + i``. A pair is masked
    when its cosine is >= sigma (``strict``: > sigma, the authors' code), except the anchor's own positive
    and (``protect_hard``) its own hard negative.
    """
    sims = guide_pos if guide_hard is None else torch.cat([guide_pos, guide_hard], dim=1)
    mask = sims > sigma if strict else sims >= sigma
    n, big_n = guide_pos.shape
    rows = torch.arange(n, device=sims.device)
    own = rows + offset
    mask[rows, own] = False  # the positive pair is never a negative
    if guide_hard is not None and protect_hard:
        mask[rows, big_n + own] = False  # Eq. 6's x^k != x: the anchor's own hard negative stays
    return mask


def masked_pairs(mask: torch.Tensor, offset: int = 0, with_hard: bool = True) -> tuple[torch.Tensor, int]:
    """(masked pairs, in-batch negatives) over the negatives of other examples: every cell but each anchor's own
    positive and (``with_hard``) own hard negative, 2N(N-1) per batch (§5.1). The own hard negative is left out even
    where ``fn_protect_hard: false`` masks it, so that the count, its share and the share over the run are of the
    same cells. The count is a 0-d tensor on the mask's device, logged without a wait (``methods/base.py``, ``Logs``)."""
    n, cols = mask.shape
    big_n = cols // 2 if with_hard else cols
    others = torch.ones_like(mask)
    rows = torch.arange(n, device=mask.device)
    others[rows, rows + offset] = False
    if with_hard:
        others[rows, big_n + rows + offset] = False
    return (mask & others).sum(), n * cols - n * (2 if with_hard else 1)


def masked_share(mask: torch.Tensor, offset: int = 0, with_hard: bool = True) -> torch.Tensor:
    """Masked pairs over the in-batch negatives of other examples (:func:`masked_pairs`): a 0-d tensor."""
    masked, total = masked_pairs(mask, offset, with_hard)
    return masked / total if total else torch.zeros((), device=mask.device)


def softmax_bce(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The authors' code's loss: binary cross-entropy of each softmax probability against a one-hot
    target (1 at the positive, 0 elsewhere), averaged over every (anchor, candidate) entry."""
    log_p = F.log_softmax(logits.float(), dim=-1)
    # log(1 - p) = log(-expm1(log p)); clamped so a probability of exactly 1 gives a large, finite loss
    log_not_p = torch.log(torch.clamp(-torch.expm1(log_p), min=1e-12))
    y = F.one_hot(target, logits.shape[-1]).bool()
    # a candidate removed from the softmax (-inf logit) has p = 0: log(1 - p) = 0, and its log p is never read
    return -torch.where(y, log_p, log_not_p).mean()


@dataclass
class Guide:
    """The frozen encoder P_eta: an embench encoder (any model ``load_model`` reads), eval mode, no grads."""

    name: str
    device: str
    max_length: int | None = None
    pooling: str | None = None  # None: the guide's own; the authors' code reads the raw [CLS] (cls_before_pooler)

    def __post_init__(self) -> None:
        from ..models.loader import load_model

        self.encoder = load_model(self.name, device=self.device, max_length=self.max_length, pooling=self.pooling)
        self.module = self.encoder.model  # loads the weights now, in eval mode
        self.module.requires_grad_(False)

    @torch.no_grad()
    def vectors(self, texts: list[str], chunk: int = 256) -> torch.Tensor:
        """Unit vectors of ``texts`` (one view of the batch), ``chunk`` texts per forward pass, left on the guide's
        device: the mask is made there, so the step never waits for the device to read them back."""
        self.module.eval()  # a caller's model.train() never reaches it, but say it where it matters
        texts = list(texts)
        parts = [self._batch(texts[i : i + chunk]) for i in range(0, len(texts), chunk)]
        return F.normalize(torch.cat(parts).float(), dim=-1)

    def _batch(self, texts: list[str]) -> torch.Tensor:
        if hasattr(self.encoder, "encode_views"):  # an embench HF encoder: the pooled vectors stay on the device
            return self.encoder.encode_views(texts, [self.encoder], as_tensors=True)[0]
        return torch.from_numpy(self.encoder.encode_batch(texts)).to(self.device)  # an encoder that only returns host arrays


def guide_cosines(guide_anchor: torch.Tensor, guide_candidates: torch.Tensor) -> torch.Tensor:
    """Cosines of unit vectors, clamped to [-1, 1] so that sigma = 1 masks only exact duplicates."""
    return (guide_anchor @ guide_candidates.T).clamp(-1.0, 1.0)


def check_sigma(sigma: float) -> None:
    from ..core.errors import EmbenchError

    if not (isinstance(sigma, (int, float)) and math.isfinite(sigma) and -1.0 <= sigma <= 1.0):
        raise EmbenchError(f"--sigma is a cosine threshold in [-1, 1], got {sigma!r}")
