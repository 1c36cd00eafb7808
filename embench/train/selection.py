"""Model selection: which evaluation keeps the best checkpoint, and which way it improves.

``--select-on`` names a metric of the evaluation callbacks (default: the first); its direction comes
from its declaration (:attr:`Evaluator.directions`): a task's main score is better higher, an analysis
declares each of its scores (``alignment`` lower, ``knn`` accuracy higher). A metric without a declared
direction cannot select, rather than be maximised by guess.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ..core.directions import HIGHER, improves
from ..core.errors import EmbenchError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Selection:
    metric: str
    direction: str  # "higher" | "lower": which scores are better

    def improves(self, score: float, best: float | None) -> bool:
        """Is ``score`` strictly better than ``best`` (None: nothing kept yet)?"""
        return improves(score, best, self.direction)

    def score(self, scores: dict[str, float]) -> float:
        if self.metric not in scores:
            raise EmbenchError(f"--select-on {self.metric!r}: no such metric; the evaluation gives {', '.join(scores)}")
        return scores[self.metric]

    def describe(self) -> str:
        return f"{self.metric} ({self.direction} is better)"


def choose(select_on: str | None, metrics: list[str], directions: dict[str, str]) -> Selection:
    """The selection of ``--select-on`` (default: the first metric), said before anything is loaded when its
    metric cannot select: unknown, or an analysis score that declares no direction."""
    metric = select_on or metrics[0]
    if metric in directions:
        return Selection(metric, directions[metric])
    selectable = ", ".join(f"{m} ({d})" for m, d in directions.items()) or "none"
    owner = next((m for m in metrics if metric == m or metric.startswith(m + "/")), None)
    if owner is not None:
        raise EmbenchError(f"--select-on {metric!r}: the analysis {owner!r} declares no direction for it (is higher or lower "
                           f"better?), so it cannot pick a checkpoint (an analysis declares its scores with "
                           f"@analysis(NAME, scores={{column: 'higher' | 'lower'}})); the metrics that can: {selectable}")
    raise EmbenchError(f"--select-on {metric!r}: no such metric; the metrics that can pick a checkpoint: {selectable}")


def warn_if_untrained_was_best(initial: float | None, best: float | None, best_step: int, selection: Selection) -> None:
    """Say so when the untrained model (step 0, not eligible) scored better than every trained step."""
    if initial is None or best is None or not selection.improves(initial, best):
        return
    side = "below" if selection.direction == HIGHER else "above (lower is better)"
    log.warning("every trained evaluation scored %s the untrained model (step 0: %.4f); the kept checkpoint is the best "
                "trained step, %d (%.4f). --set select_initial=true keeps step 0 when it scores best",
                side, initial, best_step, best)
