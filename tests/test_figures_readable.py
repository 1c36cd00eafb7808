"""Figures a reader can read (issue 36, item 8): attention maps with a colour bar, axis titles and 7 pt tokens;
t-SNE maps whose classes are named and told apart; the report's cosine densities one panel per model; error
bars on kNN bars and on the alignment-uniformity plane; whole training steps and scores x100; best and second
marked within one protocol; captions that count in words."""

from __future__ import annotations

import itertools
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.container import ErrorbarContainer

from embench.analysis import attention_maps
from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.results import Record, record_key
from embench.report import figures, style
from embench.report.paper import paper_tables
from embench.report.paper_render import render_tables, to_latex

TOKENS = ["[CLS]", "this", "is", "an", "example", "sentence", "for", "visual", "##ising", "attention", "scores", ".", "[SEP]"]


@pytest.fixture()
def drawn(monkeypatch):
    """The figures :func:`embench.report.style.save` would write, by stem (looked at instead of written)."""
    figs = {}

    def keep(fig, out, stem):
        figs[stem] = fig
        return [Path(out) / f"{stem}.png"]

    monkeypatch.setattr(style, "save", keep)
    monkeypatch.setattr(figures, "save", keep)
    yield figs
    import matplotlib.pyplot as plt

    for fig in figs.values():
        plt.close(fig)


def _maps(n_tokens: int, n_layers: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    weights = rng.random((n_layers, n_tokens, n_tokens))
    return {"tokens": [f"t{i}" for i in range(n_tokens)] if n_tokens != len(TOKENS) else TOKENS,
            "layers": (weights / weights.sum(-1, keepdims=True)).tolist()}


def _shown(labels) -> list:
    return [t for t in labels if t.get_text()]


# -- attention maps ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_attention_maps_have_a_colour_bar_axis_titles_and_7pt_tokens_within_a_page_width():
    with style.paper_style():
        fig = attention_maps.map_figure([("MiniLM", _maps(len(TOKENS), 6)), ("random", _maps(len(TOKENS), 6, seed=1))])
    assert fig.get_figwidth() <= style.PAGE_WIDTH
    bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert len(bars) == 2 and all(b.get_ylabel() == "attention weight" for b in bars)  # one per model, 0..1
    maps = [ax for ax in fig.axes if ax.images]
    assert len(maps) == 12
    assert sum(ax.get_xlabel() == "key token" for ax in maps) >= 2 and sum(ax.get_ylabel() == "query token" for ax in maps) >= 2
    assert {ax.get_ylabel() for ax in maps} <= {"query token", ""} and {ax.get_xlabel() for ax in maps} <= {"key token", ""}
    ticks = [t for ax in maps for t in _shown(ax.get_xticklabels()) + _shown(ax.get_yticklabels())]
    assert ticks and min(t.get_fontsize() for t in ticks) >= 7
    assert [t.get_text() for t in maps[0].get_yticklabels()] == TOKENS  # every query token named


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_a_long_sentence_names_every_kth_token_rather_than_shrink_the_type():
    side, cols, rows, every = attention_maps.layout(60, 12)
    assert side <= attention_maps.PANEL_INCHES[1] and every > 1 and cols * rows >= 12
    with style.paper_style():
        fig = attention_maps.map_figure([("m", _maps(60, 12))])
    assert fig.get_figwidth() <= style.PAGE_WIDTH
    labels = _shown(next(ax for ax in fig.axes if ax.images).get_yticklabels())
    assert len(labels) == len(range(0, 60, every)) and min(t.get_fontsize() for t in labels) >= 7


# -- t-SNE ------------------------------------------------------------------------------------------
def _min_distance(colours) -> float:
    return min(float(np.linalg.norm(np.subtract(a[:3], b[:3]))) for a, b in itertools.combinations(colours, 2))


def test_class_colours_are_further_apart_than_the_two_oranges_of_the_model_palette():
    oranges = _min_distance(style.palette(10))  # seaborn colour-blind: orange and vermillion
    for n in (2, 4, 6, 10):
        assert _min_distance(style.class_palette(n)) > max(oranges, 0.25)


def test_tsne_maps_name_every_class_in_a_legend_in_the_colours_of_its_points():
    from matplotlib.colors import to_hex

    from embench.analysis.tsne import tsne_figure

    rng = np.random.default_rng(0)
    classes = ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]
    labels = [classes[i % 6] for i in range(60)]
    frame = pd.concat([pd.DataFrame({"model": m, "dataset": "trec", "x": rng.normal(size=60), "y": rng.normal(size=60), "label": labels})
                       for m in ("a", "b")])
    acc = pd.DataFrame({"model": ["a", "b"], "dataset": "trec", "accuracy": [0.7, 0.5]})
    with style.paper_style():
        fig = tsne_figure(frame, acc, ["a", "b"], ["trec"])
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    assert len(legends) == 1  # one per dataset row, beside its last map
    entries = {t.get_text(): to_hex(h.get_color()) for t, h in zip(legends[0].get_texts(), legends[0].legend_handles, strict=True)}
    assert list(entries) == classes and len(set(entries.values())) == 6
    points = fig.axes[0].collections[0].get_facecolors()
    assert {(lab, to_hex(c)) for lab, c in zip(labels, points, strict=True)} == set(entries.items())


@pytest.mark.slow
def test_tsne_of_trec_names_its_coarse_classes(tmp_path, tiny_bert_dir, data_root, drawn):
    from embench.analysis import run

    run("tsne", [tiny_bert_dir], tmp_path / "tsne", data=data_root, use_cache=False, pooling="mean", datasets=("trec",), limit=200)
    legend = next(ax.get_legend() for ax in drawn["tsne"].axes if ax.get_legend())
    assert [t.get_text() for t in legend.get_texts()] == ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]


# -- cosine density: one panel per model, the analysis' code ----------------------------------------
def _pairs(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    gold = rng.uniform(0, 5, 200)
    bins = np.minimum(gold.astype(int), 4)
    labels = [f"{b}-{b + 1}" for b in bins]
    sharp = pd.DataFrame({"model": "random", "gold": gold, "bin": labels, "cosine": 0.97 + 0.001 * rng.normal(size=200)})
    broad = pd.DataFrame({"model": "trained", "gold": gold, "bin": labels, "cosine": np.clip(0.15 * gold + 0.1 * rng.normal(size=200), -1, 1)})
    folder = tmp_path / "a"
    folder.mkdir()
    pd.concat([broad, sharp]).to_csv(folder / "cosine_density_pairs.csv", index=False)
    return folder


def test_report_cosine_density_draws_one_panel_per_model_like_the_analysis(tmp_path, drawn):
    from embench.analysis.cosine_density import _ridges

    folder = _pairs(tmp_path)
    figures.compose("cosine-density", [folder], tmp_path / "out")
    report = [ax for ax in drawn["cosine_density"].axes if ax.get_visible()]
    assert [ax.get_title() for ax in report] == ["trained", "random"]
    frame = pd.read_csv(folder / "cosine_density_pairs.csv").fillna({"bin": ""})
    _ridges(frame, ["trained", "random"], ["0-1", "1-2", "2-3", "3-4", "4-5"], tmp_path / "an")
    analysis = drawn["cosine_density"].axes  # the same stem: the analysis' figure replaced the report's
    for a, b in zip(report, analysis, strict=True):  # the same ridges, drawn by the same code
        assert [list(ln.get_ydata()) for ln in a.get_lines()] == [list(ln.get_ydata()) for ln in b.get_lines()]
    assert [t.get_text() for t in report[0].get_yticklabels()] == ["0-1", "1-2", "2-3", "3-4", "4-5"]


def test_report_and_analysis_draw_a_value_per_layer_with_the_same_panel(tmp_path, drawn):
    from embench.report.per_layer import Measure, per_layer_figure

    frame = pd.DataFrame({"model": ["b"] * 3 + ["a"] * 3, "layers_kept": [3, 1, 2, 2, 3, 1],
                          "stsb_spearman": [0.5, 0.1, 0.3, 0.25, 0.4, 0.05]})
    folder = tmp_path / "a"
    folder.mkdir()
    frame.to_csv(folder / "layer_removal.csv", index=False)
    figures.compose("layer-removal", [folder], tmp_path / "out")
    report = drawn["layer_removal"]
    per_layer_figure(frame, [Measure("stsb_spearman", "STS-B")], tmp_path / "an", "layer_removal", x="layers_kept",
                     scale=100, markersize=3)
    for fig in (report, drawn["layer_removal"]):  # the analysis' figure replaced the report's under the same stem
        ax = fig.axes[0]
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        assert list(lines) == ["b", "a"]  # the models in the file's order, each its own colour
        assert list(lines["b"].get_xdata()) == [1, 2, 3] and list(lines["b"].get_ydata()) == pytest.approx([10, 30, 50])
        assert lines["a"].get_markersize() == 3 and lines["a"].get_color() != lines["b"].get_color()
        assert all(float(t).is_integer() for t in ax.get_xticks())  # whole layer numbers


# -- error bars -------------------------------------------------------------------------------------
def _bars(ax) -> dict[str, list[float]]:
    """label -> half-length of each bar's error bar."""
    out = {}
    for c in ax.containers:
        if getattr(c, "errorbar", None) is not None:
            segments = c.errorbar.lines[2][0].get_segments()
            out[c.get_label()] = [float(s[1][1] - s[0][1]) / 2 for s in segments]
    return out


def test_report_knn_bars_carry_the_standard_error_of_the_mean_over_sets(tmp_path, drawn):
    folder = tmp_path / "a"
    folder.mkdir()
    pd.DataFrame({"model": ["m1", "m1", "m2", "m2"], "dataset": ["trec", "agnews"] * 2, "transform": "raw", "metric": "euclidean",
                  "accuracy": [0.8, 0.6, 0.5, 0.7], "stderr": [0.03, 0.04, 0.05, 0.012]}).to_csv(folder / "knn.csv", index=False)
    figures.compose("knn", [folder], tmp_path / "out")
    got = _bars(drawn["knn"].axes[0])
    # by hand: independent sets, Var(mean) = (se1^2 + se2^2) / 4, x100 as the bars
    assert got["m1"] == pytest.approx([100 * 0.05 / 2]) and got["m2"] == pytest.approx([100 * np.hypot(0.05, 0.012) / 2])


def test_alignment_uniformity_points_carry_both_standard_errors_in_report_and_analysis(tmp_path, drawn):
    from embench.analysis.geometry import _plot_alignment_uniformity

    frame = pd.DataFrame({"model": ["a", "b"], "checkpoint": [np.nan, np.nan], "step": [0, 0], "alignment": [0.25, 0.05],
                          "alignment_se": [0.01, 0.002], "uniformity": [-3.8, -0.3], "uniformity_se": [0.03, 0.004]})
    folder = tmp_path / "a"
    folder.mkdir()
    frame.to_csv(folder / "alignment_uniformity.csv", index=False)
    figures.compose("alignment-uniformity", [folder], tmp_path / "out")
    report = drawn["alignment_uniformity"].axes[0]
    _plot_alignment_uniformity(frame, tmp_path / "an")
    for ax in (report, drawn["alignment_uniformity"].axes[0]):
        bars = {c.get_label(): c for c in ax.containers if isinstance(c, ErrorbarContainer)}
        assert set(bars) == {"a", "b"} and all(c.has_xerr and c.has_yerr for c in bars.values())
        x_segment, y_segment = (bars["a"].lines[2][k].get_segments()[0] for k in (0, 1))
        assert x_segment[1][0] - x_segment[0][0] == pytest.approx(2 * 0.03)
        assert y_segment[1][1] - y_segment[0][1] == pytest.approx(2 * 0.01)


# -- training curves ---------------------------------------------------------------------------------
def test_training_curves_tick_whole_steps_and_show_scores_x100(tmp_path, drawn):
    run = tmp_path / "runs" / "crop"
    run.mkdir(parents=True)
    log = [{"step": s, "loss": 1 / (s + 1), "eval/STSBenchmark-dev": 0.78 + 0.01 * s} for s in range(3)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log))
    for name in ("training-loss", "training-eval"):
        figures.compose(name, [tmp_path / "runs"], tmp_path / "out")
    for name in ("training_loss", "training_eval"):
        fig = drawn[name]
        fig.canvas.draw()
        ax = fig.axes[0]
        assert all(float(t).is_integer() for t in ax.get_xticks())  # 3 steps would get 0.25 ticks otherwise
    evals = drawn["training_eval"].axes[0]
    assert list(evals.get_lines()[0].get_ydata()) == pytest.approx([78.0, 79.0, 80.0]) and evals.get_ylabel().endswith("(x100)")
    assert list(drawn["training_loss"].axes[0].get_lines()[0].get_ydata()) == pytest.approx([1, 1 / 2, 1 / 3])  # a loss as logged


def test_checkpoint_steps_of_a_csv_without_checkpoints_raise_no_pandas_warning(tmp_path):
    from embench.report.panels import training_step

    (tmp_path / "au.csv").write_text("model,checkpoint,step,alignment,uniformity\nm1,,0,0.2,-3\nm2,,1,0.3,-2\n")
    frame = pd.read_csv(tmp_path / "au.csv")  # an all-empty column reads as float NaN
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert training_step(frame).tolist() == [0, 1]


# -- tables: marks within a protocol, captions in words ----------------------------------------------
ENCODER = {"fingerprint": "f0", "pooling": "mean", "layer": 6, "max_length": 256, "dtype": "fp32", "normalize": True,
           "lowercase": False, "prompt": ""}


def _record(model: str, task: str, score: float, **protocol) -> Record:
    proto = {**EvalProtocol().to_dict(), **protocol}
    enc = {**ENCODER, "fingerprint": model}
    return Record(task=task, display=task, kind="sts", model=model, main_score=score, scores={}, protocol=proto,
                  encoder=enc, key=record_key(task, enc, proto))


def test_split_rows_marks_best_and_second_within_each_protocol():
    recs = [_record("m1", "STS12", 0.90, correlation="pearson"), _record("m2", "STS12", 0.80, correlation="pearson"),
            _record("m1", "STS12", 0.60, correlation="spearman"), _record("m2", "STS12", 0.70, correlation="spearman")]
    (table,) = paper_tables(recs, split="rows")
    rows = {line.split(" & ")[0]: line for line in to_latex(table).splitlines() if " & " in line}
    assert "\\textbf{90.00}" in rows["m1 (correlation=pearson)"] and "\\underline{80.00}" in rows["m2 (correlation=pearson)"]
    # Spearman's 70 is best among the Spearman rows, though the Pearson rows are higher
    assert "\\textbf{70.00}" in rows["m2 (correlation=spearman)"] and "\\underline{60.00}" in rows["m1 (correlation=spearman)"]
    markdown = render_tables([table], "markdown")
    assert "**70.00**" in markdown and "<u>60.00</u>" in markdown and "**90.00**" in markdown


def test_captions_count_models_and_tasks_in_words():
    (one,) = paper_tables([_record("m1", "STS12", 0.7)])
    assert one.caption == "Results of 1 model on 1 STS task"
    recs = [_record(m, t, 0.5) for m in ("a", "b", "c", "d") for t in ("STS12", "STS13")]
    (four,) = paper_tables(recs)
    assert four.caption == "Results of 4 models on 2 STS tasks"
    (rows,) = paper_tables(recs + [_record("a", "STS12", 0.5, correlation="pearson")], split="rows")
    assert rows.caption == "Results of 4 models under 2 protocols on 2 STS tasks" and "(s)" not in rows.caption


def test_log_axes_are_labelled_in_plain_text_not_mathtext_source(tmp_path):
    """With text.parse_math off (names drawn literally), matplotlib's log ticks printed as $\\mathdefault{10^{-1}}$
    (the spectrum figure's y axis): :func:`style.save` labels them 10⁰, 10⁻¹, 10⁻²."""
    with style.paper_style():
        fig, axes = style.figure()
        ax = axes[0][0]
        ax.plot([1, 2, 3], [1.0, 0.1, 0.01])
        ax.set_yscale("log")
        style.plain_log_ticks(fig)
        fig.canvas.draw()
        labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
        assert {"10⁰", "10⁻¹", "10⁻²"} <= set(labels) and not any("$" in t for t in labels)
        paths = style.save(fig, tmp_path, "log")  # the path every figure takes
    assert all(p.stat().st_size > 0 for p in paths)
    assert style.plain_text(r"$\mathdefault{2\times10^{-1}}$") == "2×10⁻¹" and style.plain_text("$5 or $6") == "$5 or $6"
