"""One way to draw a value per layer, for ``embench analyze`` (layers, layer-removal, attention sinks,
cls-energy) and ``embench report`` (the same CSVs): one line per model in its colour, markers on the
layers, x ticks on whole layer numbers, so the analysis' figure and the report's cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from . import style


@dataclass(frozen=True)
class Measure:
    """One panel: the column drawn, its label (the y axis, or the title when the panels share a y label),
    and a column of one standard error drawn as a band around the line."""

    column: str
    label: str
    err: str | None = None
    math: bool = False  # the label is matplotlib mathtext (E_CLS); other text is drawn as it is


def per_layer(ax, data: pd.DataFrame, colours: Mapping[str, tuple], column: str, *, x: str = "layer",
              scale: float = 1.0, err: str | None = None, labels: Mapping[str, str] | None = None,
              markersize: float | None = None) -> None:
    """``scale * column`` against ``x`` (a layer number), one line per model in the order of ``data``."""
    extra = {"ms": markersize} if markersize is not None else {}
    for m, g in data.groupby("model", sort=False):
        g = g.sort_values(x)
        ax.plot(g[x], scale * g[column], marker="o", color=colours[m], label=style.legend_label((labels or {}).get(m, m)), **extra)
        if err:
            ax.fill_between(g[x], scale * (g[column] - g[err]), scale * (g[column] + g[err]), color=colours[m], alpha=0.2, lw=0)
    ax.xaxis.get_major_locator().set_params(integer=True)  # layers are whole numbers


def per_layer_figure(frame: pd.DataFrame, measures: Sequence[Measure], out: Path | str, stem: str, *, x: str = "layer",
                     xlabel: str = "layer", scale: float = 1.0, ylabel: str | None = None,
                     labels: Mapping[str, str] | None = None, markersize: float | None = None) -> list[Path]:
    """A row of :func:`per_layer` panels, one per measure, the models in their order in ``frame`` with one
    colour each; ``ylabel`` given: one y label for all (on the first panel), the measures' labels as titles
    and the panels sharing their y axis. Written as ``out/stem.png`` and ``.pdf``."""
    models = list(dict.fromkeys(frame["model"]))
    colours = dict(zip(models, style.palette(len(models)), strict=False))
    with style.paper_style():
        fig, axes = style.figure(ncols=len(measures), sharey=ylabel is not None)
        for ax, m in zip(axes[0], measures, strict=True):
            per_layer(ax, frame, colours, m.column, x=x, scale=scale, err=m.err, labels=labels, markersize=markersize)
            ax.set_xlabel(xlabel)
            if ylabel is None:
                ax.set_ylabel(m.label, parse_math=m.math)
            else:
                ax.set_title(m.label, parse_math=m.math)
        if ylabel is not None:
            axes[0, 0].set_ylabel(ylabel)
        axes[0, 0].legend(loc="best")
        fig.tight_layout()
        return style.save(fig, out, stem)
