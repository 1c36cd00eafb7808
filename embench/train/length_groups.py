"""Texts cut into passes of like length, so that each pass pads its texts to a length near their own.

A pass is padded to its longest text. Two users: a step split into micro-batches (GradCache, ``accumulation.py``)
cuts its texts into ``text_groups`` of at most an even split's padded size; and one pass over many texts is cut
into ``length_buckets`` of at most a token budget, cut where they pad least (``SentenceModel.forward``: one
autograd graph over the buckets, so the update is that of one pass). Pure functions over token counts: the trainer
foresees the same cuts when it tokenizes the next step ahead (``step.pretokenize_next``).
"""

from __future__ import annotations

import itertools

from ..core.length_cuts import least_cost_cuts


def micro_sizes(examples: int, parts: int) -> list[int]:
    """``examples`` cut into ``parts`` micro-batches as even as they go (the first ones one larger)."""
    parts = max(1, min(parts, examples))
    return [examples // parts + (i < examples % parts) for i in range(parts)]


def text_groups(lengths: list[int], parts: int, even: bool = False) -> list[list[int]]:
    """A split step's passes cut by text: positions of its texts (``lengths``: tokens each), longest first (stable),
    each pass within the budget of ``parts`` example micro-batches, ceil(n / parts) texts at the step's longest
    length: the fewest such passes, cut where they pad least (``least_cost_cuts`` with its floor at the budget). So
    no pass holds more padded tokens than the largest even split would, and shorter texts share a pass. The bellm
    recipe's step (256 SNLI triplets, 768 texts, 10 parts; three random steps, ``tests/test_length_buckets.py``):
    5 passes padded 15.0-15.2k real tokens to 16.8-17.1k, where filling each pass longest first (before 2026-11-28)
    padded 17.7-18.8k (run H on an H200: 18.6k for 15.8k); 10 micro-batches of whole examples padded 15.7k to 23.1k
    on an H200. ``even``: exactly ``parts`` passes of counts as even as they go (under DDP: the same number of passes
    in every process)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    if even:
        bounds = [0, *itertools.accumulate(micro_sizes(len(order), parts))]
        return [order[a:b] for a, b in itertools.pairwise(bounds)]
    budget = -(-len(lengths) // max(1, parts)) * (lengths[order[0]] if order else 0)
    return _cut_in_order(lengths, order, budget, budget)


def length_buckets(lengths: list[int], budget: int, floor: int = 0) -> list[list[int]] | None:
    """One pass's texts (``lengths``: tokens each) cut into buckets of at most ``budget`` padded tokens (a text longer
    than that alone), positions longest first; None where the pass stays whole: no budget (0), or all its texts
    padded to the longest fit in it.

    The cuts are those of least cost (``least_cost_cuts``): a bucket costs its padded tokens, and at least ``floor``
    (capped at the budget), because a small pass is not cheaper in proportion: on a GPU its matrix products do not
    fill the device and its kernel launches are no longer hidden. So the buckets follow the lengths where they vary
    and stay large where they do not. The bellm recipe's step of 768 SNLI texts of up to 60 tokens (three random
    steps, all-MiniLM-L6-v2's tokenizer; ``tests/test_length_buckets.py``): 15.0-15.2k real tokens, 46k padded as
    one pass; 19.8-20.8k in 3 buckets of 8,192 filled longest first (the cut before 2026-11-28), 18.6-19.6k in 3 cut
    at least cost, and 16.3-16.7k at least cost with a floor of 2,048 (7 buckets): a fifth less for the device."""
    if budget <= 0 or len(lengths) < 2 or len(lengths) * max(lengths) <= budget:
        return None
    return _cut_in_order(lengths, sorted(range(len(lengths)), key=lambda i: -lengths[i]), budget, min(floor, budget))


def _cut_in_order(lengths: list[int], order: list[int], budget: int, floor: int) -> list[list[int]]:
    """The positions ``order`` (longest first) cut where they pad least (``least_cost_cuts``)."""
    cuts = least_cost_cuts([lengths[i] for i in order], budget, floor)
    return [order[a:b] for a, b in itertools.pairwise(cuts)]
