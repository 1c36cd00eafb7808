"""A training evaluation's number as `embench train` and the model card print it.

A task's main score is a fraction printed x100 with two decimals, as every table prints it (0.8203: 82.03); an
analysis' number (alignment 5.1e-06, uniformity -2.3) is printed as it is, to four significant digits: x100 with two
decimals made alignment 0.00.
"""

from __future__ import annotations

from collections.abc import Sequence


def is_analysis_metric(metric: str, analyses: Sequence[str]) -> bool:
    """Whether ``metric`` (a key of the evaluation's scores) is an ``--eval-analysis`` one: ``KEY`` or ``KEY/column``
    of one of ``analyses`` (the items as given, the evaluator's keys); any other is a task's (or suite's) score."""
    return any(metric == a or metric.startswith(a + "/") for a in analyses)


def score_text(value: float, analysis: bool) -> str:
    """``value`` x100 (a task's score) or as it is (an analysis')."""
    return f"{value:.4g}" if analysis else f"{100 * value:.2f}"


def selected_metric(cfg) -> str | None:
    """The metric that picks the best checkpoint of ``cfg``: ``select_on``, else the first task, else the first analysis
    (``Trainer.setup``'s ``choose``); None when nothing is evaluated."""
    return cfg.select_on or next(iter([*(cfg.eval_tasks or []), *(cfg.eval_analyses or [])]), None)
