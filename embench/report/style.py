"""One paper plotting style for every embench figure.

Single-column-friendly sizes, a serif-free clean look (seaborn's ``ticks`` theme), a colour-blind
safe palette with a fixed colour per model in the order given, and :func:`save` writing PNG (for
reading on screen) and PDF (for papers) side by side.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from ..core.atomic import atomic_path, output_errors

COLUMN_WIDTH = 3.4  # inches: one column of a two-column paper
PAGE_WIDTH = 7.0
RC = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.linewidth": 0.6,
    "lines.linewidth": 1.4,
    "lines.markersize": 4,
    "savefig.dpi": 200,
    "savefig.bbox": "tight",
    "pdf.fonttype": 42,  # TrueType in PDFs, as publishers ask
    # text is literal: a model named m$\bad$_1, a label x$y$z or a sentence's "$5 or $6" tokens drew as (or failed
    # to parse as) mathtext; embench's own math labels ask for it (parse_math=True)
    "text.parse_math": False,
}


def legend_label(name: str) -> str:
    """``name`` as a legend shows it: matplotlib leaves out an artist whose label starts with "_" (``_draft``)."""
    name = str(name)
    return " " + name if name.startswith("_") else name


def palette(n: int) -> list:
    """``n`` colour-blind safe colours, one per model, stable in the given order."""
    import seaborn as sns

    return sns.color_palette("colorblind", max(n, 1))


def class_palette(n: int) -> list:
    """``n`` clearly distinct colours for unordered classes (t-SNE labels): tab10 up to 10 classes, tab20 up to 20,
    evenly spaced hues beyond. Not :func:`palette`: seaborn's colour-blind set holds two near-identical oranges,
    fine for a few models told apart by a legend, not for clouds of points told apart by colour alone."""
    import seaborn as sns

    n = max(n, 1)
    return sns.color_palette("tab10" if n <= 10 else "tab20" if n <= 20 else "husl", n)


def ordered_palette(n: int) -> list:
    """``n`` colours of a sequential map (viridis, without its palest yellow) for ordered groups such as gold-score bins."""
    import matplotlib

    cmap = matplotlib.colormaps["viridis"]
    return [cmap(0.85 * i / max(n - 1, 1)) for i in range(max(n, 1))]


@contextlib.contextmanager
def paper_style():
    """Matplotlib settings for the duration of one figure (nothing leaks to the caller)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    import seaborn as sns

    with plt.rc_context():
        sns.set_theme(style="ticks", context="paper", rc=RC)
        yield plt


def figure(ncols: int = 1, nrows: int = 1, width: float | None = None, height: float | None = None, **kw):
    """A figure with ``nrows`` x ``ncols`` panels sized for a paper (one column when it fits)."""
    import matplotlib.pyplot as plt

    width = width or (COLUMN_WIDTH if ncols == 1 else min(PAGE_WIDTH, 2.4 * ncols))
    height = height or 2.4 * nrows
    return plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False, **kw)


def save(fig, out: Path | str, stem: str) -> list[Path]:
    """Write ``stem.png`` and ``stem.pdf`` into ``out``; returns both paths."""
    import matplotlib.pyplot as plt

    plain_log_ticks(fig)
    out = Path(out)
    paths = [out / f"{stem}.png", out / f"{stem}.pdf"]
    try:
        with output_errors(out):  # a file of the folder's name: one line naming it, not a FileExistsError traceback
            out.mkdir(parents=True, exist_ok=True)
        for p in paths:  # under a temporary name, then renamed: a full disk keeps the previous figure
            with output_errors(p), atomic_path(p) as tmp:
                fig.savefig(tmp, format=p.suffix[1:])  # the temporary name's .tmp is no format
    finally:
        plt.close(fig)
    return paths


SUPERSCRIPTS = str.maketrans("-−0123456789", "⁻⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def plain_text(label: str) -> str:
    """A tick label matplotlib writes in mathtext (``$\\mathdefault{10^{-1}}$``, ``$\\mathdefault{2\\times10^{-1}}$``) as
    plain text (10⁻¹, 2×10⁻¹): with ``text.parse_math`` off (``RC``) it would print as its source."""
    if not (label.startswith("$") and label.endswith("$")):
        return label
    text = label.strip("$").replace("\\mathdefault", "").replace("\\times", "×").replace("\\,", "")
    text = re.sub(r"\^\{([^}]*)\}|\^(-?\d)", lambda m: (m.group(1) or m.group(2)).translate(SUPERSCRIPTS), text)
    return text.replace("{", "").replace("}", "")


def plain_log_ticks(fig) -> None:
    """Every log axis of ``fig`` labelled in plain text (:func:`plain_text`), the formatter's choice of ticks kept."""
    from matplotlib.ticker import Formatter, LogFormatter

    class Plain(Formatter):
        def __init__(self, inner: Formatter):
            self.inner = inner

        def set_axis(self, axis) -> None:
            super().set_axis(axis)
            self.inner.set_axis(axis)

        def set_locs(self, locs) -> None:
            self.inner.set_locs(locs)

        def __call__(self, x, pos=None) -> str:
            return plain_text(self.inner(x, pos))

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if isinstance(axis.get_major_formatter(), LogFormatter):
                axis.set_major_formatter(Plain(axis.get_major_formatter()))
            if isinstance(axis.get_minor_formatter(), LogFormatter):
                axis.set_minor_formatter(Plain(axis.get_minor_formatter()))
