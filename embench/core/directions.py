"""Which way a score improves. Every number a training run may select its checkpoint on declares it, as
sentence-transformers' evaluators carry ``greater_is_better``: a correlation or an accuracy is better
higher, an alignment (Wang and Isola 2020) or a loss lower.
"""

from __future__ import annotations

from .errors import EmbenchError

HIGHER, LOWER = "higher", "lower"
DIRECTIONS = (HIGHER, LOWER)


def check_direction(direction: str, where: str) -> str:
    """``direction`` if it is ``higher`` or ``lower``; else an error naming ``where`` it was declared."""
    if direction not in DIRECTIONS:
        raise EmbenchError(f"{where}: a score's direction is 'higher' or 'lower' (which is better), not {direction!r}")
    return direction


def improves(score: float, best: float | None, direction: str) -> bool:
    """Is ``score`` strictly better than ``best`` (None: nothing yet, so any score is)? Ties keep the earlier."""
    if best is None:
        return True
    return score > best if direction == HIGHER else score < best
