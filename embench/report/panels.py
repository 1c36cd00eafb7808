"""Panels drawn the same way by an analysis (``embench analyze``) and by the report (``embench report``), so
the two figures of one measurement cannot drift apart: the alignment-uniformity plane (SimCSE Figure 2)
and the cosine ridges (SimCSE Figure G.1). Each draws from the CSV rows the analysis writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .style import legend_label, ordered_palette


def training_step(frame: pd.DataFrame) -> pd.Series:
    """The training step of each row: the last number of its checkpoint folder's name (``step-000040``),
    else the ``step`` column (which says the same since 2026-11-28; CSVs written before numbered a series' points
    0, 1, 2, ...)."""
    if "checkpoint" in frame:
        # a CSV whose checkpoints are all empty reads as a float column of NaN: make it text before filling
        names = frame["checkpoint"].astype("string").fillna("")
    else:
        names = pd.Series("", index=frame.index, dtype="string")
    parsed = pd.to_numeric(names.str.extract(r"(\d+)(?!.*\d)", expand=False), errors="coerce")
    return parsed.fillna(frame["step"].astype(float)).astype(int)


def alignment_uniformity(ax, data: pd.DataFrame, colours: Mapping[str, tuple]) -> None:
    """Each model a point in the (uniformity, alignment) plane, a checkpoint series a line in training order
    with its steps beside the points; error bars of one standard error where the rows carry
    ``alignment_se``/``uniformity_se`` (older CSVs do not: points only)."""
    from matplotlib.ticker import MaxNLocator

    data = data.assign(step=training_step(data))
    for m, g in data.groupby("model", sort=False):
        g = g.sort_values("step")
        ax.errorbar(g["uniformity"], g["alignment"], xerr=g.get("uniformity_se"), yerr=g.get("alignment_se"),
                    fmt="o-" if len(g) > 1 else "o", color=colours[m], label=legend_label(m), lw=1.0, elinewidth=0.7, capsize=1.5)
        if len(g) > 1:  # a checkpoint series (SimCSE Figure 2's trajectory): every point's step when there are few
            for _, row in g.iloc[:: max(1, len(g) // 4)].iterrows():
                ax.annotate(str(int(row["step"])), (row["uniformity"], row["alignment"]), fontsize=7, xytext=(3, 3),
                            textcoords="offset points")
    ax.xaxis.set_major_locator(MaxNLocator(4))  # long tick labels of a narrow range must not overlap
    ax.margins(0.12)
    ax.set_xlabel(r"$\ell_{\mathrm{uniform}}$ (lower is better)", parse_math=True)
    ax.set_ylabel(r"$\ell_{\mathrm{align}}$ (lower is better)", parse_math=True)


def gold_groups(data: pd.DataFrame) -> list[str]:
    """The non-empty gold-score groups of cosine-density rows, ordered by their lowest gold score."""
    found = data[data["bin"].fillna("").astype(str) != ""]
    return list(found.groupby("bin")["gold"].min().sort_values().index)


def cosine_ridges(axes: Sequence, data: pd.DataFrame, models: Sequence[str], groups: Sequence[str] | None = None,
                  title_colours: Mapping[str, tuple] | None = None) -> None:
    """One panel per model (``axes``, sharing y): the gold-score groups bottom to top, the density of their pair
    cosines along x (Gaussian KDE, Scott's bandwidth), each ridge scaled to the same height. One panel per
    model, not one for all: a random model's sharp peak would flatten every other model's densities.
    ``groups``: the group labels (default :func:`gold_groups`); ``title_colours``: a model's colour for its title."""
    from scipy.stats import gaussian_kde

    groups = list(groups) if groups is not None else gold_groups(data)
    colours = ordered_palette(len(groups))
    lo = min(-0.1, float(data["cosine"].min()) - 0.05)
    grid = np.linspace(lo, 1.0, 300)
    for ax, model in zip(axes, models, strict=True):
        g = data[data["model"] == model]
        for k, label in enumerate(groups):
            c = g.loc[g["bin"] == label, "cosine"].to_numpy()
            if len(c) < 2 or np.ptp(c) == 0:  # no density of a single value
                continue
            d = gaussian_kde(c)(grid)
            d = 0.9 * d / d.max()  # ridges are read by their shape
            ax.fill_between(grid, k, k + d, color=colours[k], alpha=0.6, lw=0)
            ax.plot(grid, k + d, color=colours[k], lw=0.8)
        ax.set_title(model, color=(title_colours or {}).get(model, "black"))
        ax.set_xlabel("cosine similarity")
        ax.set_xlim(lo, 1.0)
    axes[0].set_yticks(range(len(groups)), groups)
    axes[0].set_ylabel("gold score group")
