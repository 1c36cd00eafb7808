"""JTCSE Figure 9's attention maps, drawn to be read at print size: one head-averaged map per layer, rows
the query tokens and columns the key tokens, each token named in 7 pt type, with a colour bar of the
attention weight (0 to 1, the same scale for every panel) per model.

The layers wrap into rows so that the figure fits a page width (7 in) with its token labels at 7 pt:
a panel is as wide as its tokens need, and a long sentence names every k-th token rather than shrinking
the type below what a printed page shows.
"""

from __future__ import annotations

import math

import numpy as np

from ..report import style

TICK_PT = 7  # the smallest type a printed figure can carry
TOKEN_INCHES = 0.12  # one 7 pt token label with a little air
PANEL_INCHES = (1.2, 2.6)  # narrowest and widest panel
MARGIN_INCHES = 1.4  # the query-token labels on the left and the colour bar on the right


def layout(n_tokens: int, n_layers: int, width: float = style.PAGE_WIDTH) -> tuple[float, int, int, int]:
    """(panel side in inches, columns, rows per model, label every k-th token) for maps of ``n_tokens``."""
    side = min(PANEL_INCHES[1], max(PANEL_INCHES[0], TOKEN_INCHES * n_tokens))
    cols = max(1, min(n_layers, int((width - MARGIN_INCHES) // (side + 0.15))))
    every = max(1, math.ceil(TOKEN_INCHES * n_tokens / side))
    return side, cols, math.ceil(n_layers / cols), every


def map_figure(maps: list[tuple[str, dict]]):
    """The figure of one sentence: for each (model label, {"tokens", "layers", "layer_numbers"}) a block of one panel
    per layer, titled with the model, with its own colour bar."""
    import matplotlib.pyplot as plt

    n_tokens = max(len(m["tokens"]) for _, m in maps)
    n_layers = max(len(m["layers"]) for _, m in maps)
    side, cols, _, every = layout(n_tokens, n_layers)
    rows = [math.ceil(len(m["layers"]) / cols) for _, m in maps]  # a shallower model takes fewer rows
    blocks = [r * (side + 0.8) + 0.3 for r in rows]  # rows of panels, their rotated key-token labels, the model's title
    fig = plt.figure(figsize=(min(style.PAGE_WIDTH, cols * (side + 0.15) + MARGIN_INCHES), sum(blocks)), layout="constrained")
    subs = np.atleast_1d(fig.subfigures(len(maps), 1, height_ratios=blocks))
    for sub, (label, m), n_rows in zip(subs, maps, rows, strict=True):
        sub.suptitle(label, fontsize=8, fontweight="bold")
        axes = sub.subplots(n_rows, cols, squeeze=False)
        ticks = range(0, len(m["tokens"]), every)
        names = [m["tokens"][i] for i in ticks]
        image = None
        for layer, ax in enumerate(axes.flat):
            if layer >= len(m["layers"]):
                ax.axis("off")
                continue
            image = ax.imshow(np.asarray(m["layers"][layer]), cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
            row, col = divmod(layer, cols)
            ax.set_xticks(ticks, names, rotation=90, fontsize=TICK_PT)
            ax.set_yticks(ticks, names if col == 0 else [], fontsize=TICK_PT)
            ax.tick_params(length=0, pad=1)
            ax.set_title(f"layer {m.get('layer_numbers', range(1, len(m['layers']) + 1))[layer]}", fontsize=8)  # a branch's: L-K+1..L
            if col == 0:
                ax.set_ylabel("query token")
            if layer + cols >= len(m["layers"]):  # no panel below: the key-token axis is named here
                ax.set_xlabel("key token")
        cbar = sub.colorbar(image, ax=axes, shrink=min(0.8, 1.6 / n_rows), aspect=25)  # about two panels tall at most
        cbar.set_label("attention weight", fontsize=8)
        cbar.ax.tick_params(labelsize=TICK_PT)
    return fig


def plot_maps(maps: dict[str, list[dict]], labels: list[str], out) -> list:
    """One figure per sentence (``attention_maps.png``, or ``attention_maps_<i>.png`` for several); ``maps``:
    model label -> per sentence {"tokens", "layers"}, as ``attention_maps.json`` holds them."""
    files = []
    n_sent = len(maps[labels[0]])
    for s in range(n_sent):
        with style.paper_style():
            fig = map_figure([(label, maps[label][s]) for label in labels])
            files += style.save(fig, out, "attention_maps" if n_sent == 1 else f"attention_maps_{s}")
    return files
