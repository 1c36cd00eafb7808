"""The audit's Matryoshka and quantisation axes: the ``truncate_dim`` and ``quantize`` knobs, the grid of
every dimension x precision, and its figure (score against dimension, one line per precision).

Every cell is a record :func:`embench.evaluate` scores from the baseline's vectors (the embedding cache
keeps them at full length and precision: :mod:`embench.encoding.vector_axes`), so the whole grid costs
scoring only. A knob's one-at-a-time variant and the grid's cell of the same setting are one record.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..api import evaluate
from ..core.errors import EmbenchError, UndefinedScoreError
from ..encoding.quantize import PRECISIONS
from ..encoding.vector_axes import axis_values
from ..evaluation.evaluation_view import Evaluation
from .knobs import Variant

VECTOR_KNOBS = ("truncate_dim", "quantize")
# float32 (the vectors normalised, no rounding) scores within 1e-4 of the vectors as encoded, the grid's first line:
# a line of its own only when asked for (--quantize float32), which it then is, as embench run scores it
GRID_PRECISIONS = tuple(p for p in PRECISIONS if p != "float32")
AS_ENCODED = "as encoded"  # the line of unquantised vectors, full length and precision


def matryoshka_dims(full: int, n: int = 5, smallest: int = 8) -> list[int]:
    """The ``n`` largest powers of two below ``full`` and not below ``smallest`` (384 -> 256, 128, 64, 32, 16):
    the sizes Matryoshka models are trained at (Kusupati et al. 2022; sentence-transformers' MatryoshkaLoss)."""
    dims, d = [], 1 << max(int(full - 1).bit_length() - 1, 0)
    while d >= smallest and len(dims) < n:
        if d < full:
            dims.append(d)
        d //= 2
    return dims


def vector_variants(knobs: Sequence[str], dims: Sequence[int], precisions: Sequence[str]) -> list[Variant]:
    """The knobs' one-at-a-time variants: each dimension (unquantised), each precision (full length)."""
    out = [Variant(f"truncate_dim={d}", {"truncate_dim": d}) for d in dims] if "truncate_dim" in knobs else []
    return out + ([Variant(f"quantize={q}", {"quantize": q}) for q in precisions] if "quantize" in knobs else [])


def sweep(full: int | None, truncate_dim: int | Sequence[int] | None,
          quantize: str | Sequence[str] | None) -> tuple[list[int], list[str]]:
    """The dimensions (those given, one or several, else :func:`matryoshka_dims`) and precisions (those given, else
    every quantised one) the knobs and the grid cover; a dimension past the vectors' length is an error naming it."""
    given_dims, given_precisions = axis_values(truncate_dim, quantize)  # checked as evaluate() checks them
    dims = [d for d in given_dims if d is not None] or matryoshka_dims(full or 0)
    for d in dims:
        if full is not None and d > full:
            raise EmbenchError(f"--truncate-dim {d}: the audited vectors have {full} dimensions; choose 1 to {full}")
    precisions = [str(q) for q in given_precisions if q is not None] or list(GRID_PRECISIONS)
    return [d for d in dict.fromkeys(dims) if d != full], list(dict.fromkeys(precisions))


def undefined_as_empty(v: Variant, run: Callable[[], Any]) -> Any:
    """``run()`` (a variant's evaluation); for a variant whose score is undefined on some task (every similarity
    equal, as the 1-bit vectors of a tiny model can make them), the evaluation of its other tasks, with a warning
    naming the variant and why: its undefined cells (and its Avg.) are left empty rather than stopping the audit and
    losing the variants already scored. A truncate-dim or quantize variant's other errors are said the same way."""
    try:
        return run()
    except EmbenchError as e:
        if not set(v.knobs) & set(VECTOR_KNOBS) and not isinstance(e, UndefinedScoreError):
            raise
        warnings.warn(f"audit variant {v.label}: {e}; those cells are left empty", stacklevel=2)
        return _scored_part(e)


def _scored_part(e: EmbenchError) -> Evaluation:
    """What an undefined score's error says was scored (UndefinedScoreError.evaluation), or nothing."""
    part = e.evaluation if isinstance(e, UndefinedScoreError) else None
    return part if part is not None else Evaluation(records=[])


def dimension_grid(model: Any, tasks: list[str], common: dict[str, Any], full: int, dims: Sequence[int],
                   precisions: Sequence[str], say: Callable[[str], None]) -> pd.DataFrame:
    """Every task's score and Avg. (fractions) for each precision (rows ``(precision, dim)``); one evaluation per
    precision, every dimension in it. A precision whose score is undefined on a task (all similarities equal, as
    1-bit vectors of a tiny model can give) is said; those cells (and their Avg.) are left empty, the others kept."""
    rows: dict[tuple[str, int], dict[str, float]] = {}
    for q in [None, *precisions]:
        try:
            ev = evaluate(model, None, tasks=tasks, **common, truncate_dim=[None, *dims], quantize=q)
        except EmbenchError as e:
            if not isinstance(e, UndefinedScoreError):
                raise
            say(f"dimension grid: {q}: {e}; those cells are left empty")
            ev = _scored_part(e)
        for r in ev.records:
            key = (q or AS_ENCODED, int((r.encoder or {}).get("truncate_dim") or full))
            rows.setdefault(key, {})[r.display] = r.main_score
    frame = pd.DataFrame.from_dict(rows, orient="index")
    if frame.empty:
        return frame
    frame["Avg."] = frame.mean(axis=1, skipna=False)  # over every task, or none: not over the defined ones
    frame.index = pd.MultiIndex.from_tuples(frame.index, names=["precision", "dim"])
    return frame.sort_index(level="dim", ascending=False, sort_remaining=False)


def grid_table(grid: pd.DataFrame) -> pd.DataFrame:
    """Avg. with the dimensions as rows and the precisions as columns (largest dimension first)."""
    table = grid["Avg."].unstack("precision").sort_index(ascending=False)
    return table[[p for p in dict.fromkeys(grid.index.get_level_values("precision")) if p in table.columns]]


def dimension_figure(grid: pd.DataFrame, out: Path | str, model: str, stem: str = "score_by_dimension") -> list[Path]:
    """Avg. (x100) against the number of dimensions kept (log2 axis), one line per precision, as PNG and PDF.
    ``binary`` and ``ubinary`` are the same bits, so their lines coincide (ubinary is drawn dashed above it)."""
    from ..report.style import figure, palette, paper_style, save

    table = grid_table(grid)
    with paper_style():
        fig, axes = figure()
        ax = axes[0][0]
        for (precision, column), colour in zip(table.items(), palette(len(table.columns)), strict=True):
            points = column.dropna()
            ax.plot(points.index, 100 * points.values, marker="o", color=colour, label=precision,
                    linestyle="--" if precision == "ubinary" else "-")
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(table.index), [str(d) for d in table.index])
        ax.minorticks_off()
        ax.set(xlabel="dimensions kept (Matryoshka truncation)", ylabel="Avg. score (x100)", title=model)
        ax.legend(title="precision", loc="best")
        return save(fig, out, stem)

