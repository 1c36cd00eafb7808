"""Figures draw names as they are: a model named m$\\bad$_1 failed with mathtext's ParseFatalException (after its
CSV was written), x$y$z drew y in math italics, a sentence's "$5 or $6" tokens likewise, and a label starting with
"_" was left out of the legend. embench's own math labels (E_CLS, l_align) still render as math."""

from __future__ import annotations

import pandas as pd
import pytest

from embench.report import style
from embench.report.per_layer import Measure, per_layer_figure

NAMES = ["m$\\bad$_1", "_draft", "x$y$z"]


@pytest.fixture()
def kept(monkeypatch):
    figures = []
    real = style.save

    def save(fig, out, stem):
        figures.append(fig)  # drawn (and parsed) by savefig: a mathtext error would raise here
        return real(fig, out, stem)

    monkeypatch.setattr(style, "save", save)
    return figures


@pytest.mark.slow
def test_model_names_are_drawn_literally_and_every_one_is_in_the_legend(tmp_path, kept):
    frame = pd.DataFrame([{"model": m, "layer": layer, "v": 0.1 * i + layer} for i, m in enumerate(NAMES) for layer in (0, 1)])
    paths = per_layer_figure(frame, [Measure("v", r"CLS energy weight $E_{\mathrm{CLS}}$", math=True)], tmp_path, "f")
    assert all(p.stat().st_size > 1000 for p in paths)
    ax = kept[0].axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert [t.strip() for t in legend] == NAMES
    assert not any(t.get_parse_math() for t in ax.get_legend().get_texts())
    assert ax.yaxis.label.get_parse_math()  # the measure's own math label


@pytest.mark.slow
def test_alignment_uniformity_axes_keep_their_math(tmp_path, kept):
    from embench.report.panels import alignment_uniformity

    with style.paper_style():
        fig, axes = style.figure()
        data = pd.DataFrame({"model": NAMES, "uniformity": [-3.0, -2.0, -1.0], "alignment": [0.2, 0.3, 0.4], "step": [0, 0, 0]})
        alignment_uniformity(axes[0, 0], data, dict(zip(NAMES, style.palette(3), strict=True)))
        axes[0, 0].legend()
        style.save(fig, tmp_path, "au")
    ax = kept[0].axes[0]
    assert ax.xaxis.label.get_parse_math() and ax.yaxis.label.get_parse_math()
    assert len(ax.get_legend().get_texts()) == 3
