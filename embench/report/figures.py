"""Figures composed from stored outputs (``embench analyze`` CSVs, ``embench train`` metric logs), with
one colour per model across every figure of a report, written as PNG and PDF.

A composer reads the CSV an analysis wrote (found anywhere under the folders given), keeps the models
asked for, and draws them in the report's colours. A model without that output is an error that says
which command makes it; nothing is recomputed here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import EmbenchError, UnknownNameError
from ..core.paths import not_there
from ..core.registry import nearest
from .analysis_files import read_csv, read_jsonl
from .model_match import model_labels, same_model
from .panels import alignment_uniformity, cosine_ridges
from .per_layer import per_layer
from .style import figure, legend_label, palette, paper_style, save


@dataclass(frozen=True)
class Composer:
    """How one figure is drawn: the file it reads, the function that draws it, the command that makes the file."""

    file: str
    draw: Callable
    makes: str  # the command that writes ``file``, with {model} and {name} to fill in
    caption: str
    per_model: bool = False  # one panel per model (``draw`` gets the row of panels) instead of one shared panel
    columns: tuple[str, ...] = ()  # the CSV columns ``draw`` reads besides ``model``: checked, not a KeyError mid-draw


def model_colours(models: Sequence[str]) -> dict[str, tuple]:
    """A fixed colour per model, in the order given: the same model has the same colour in every figure."""
    return dict(zip(models, palette(len(models)), strict=False))


def read_output(folders: Sequence[Path | str], file: str, columns: Sequence[str] = ("model",)) -> pd.DataFrame:
    """Every ``file`` under ``folders`` (searched recursively), concatenated; ``.jsonl`` logs get a
    ``model`` column from their file name (``minilm-crop.metrics.jsonl`` -> ``minilm-crop``). A CSV without one of
    ``columns`` is an error naming it."""
    frames = []
    for folder in map(Path, folders):
        if not folder.is_dir():
            raise EmbenchError(f"analysis folder {folder} {not_there(folder, 'folder')}")
        for path in sorted(folder.rglob(file)):
            if path.suffix == ".jsonl":
                frame = read_jsonl(path)
                stem = path.name.split(".")[0].removesuffix("-metrics")
                frame["model"] = path.parent.name if stem == "metrics" else stem  # a run folder's own log
            else:
                frame = read_csv(path, columns)  # checked: a torn or empty file, a column missing is an error naming it
                if "model" in frame:  # a model named 1 is the name "1", as -m and --name give it
                    frame["model"] = frame["model"].astype(str)
            frame["source"] = str(path)
            frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["model"])


def _spectrum(ax, data, colours):
    for m, g in data.groupby("model", sort=False):
        ax.plot(g["index"], g["normalised"], color=colours[m], label=legend_label(m))
    ax.set(xlabel="singular value index", ylabel="normalised singular value")  # linear axes, as Figure F.1


def _density(axes, data, colours):
    """Figure G.1 as ``embench analyze cosine-density`` draws it: one panel per model, titled in its colour."""
    cosine_ridges(axes, data, list(dict.fromkeys(data["model"])), title_colours=colours)


def _per_layer(column: str, label: str, *, x: str = "layer", xlabel: str = "layer", **options):
    """The analysis' per-layer panel (:func:`embench.report.per_layer.per_layer`) with the report's labels."""
    def draw(ax, data, colours):
        per_layer(ax, data, colours, column, x=x, **options)
        ax.set(xlabel=xlabel, ylabel=label)
    return draw


def _token_dependency(ax, data, colours):
    """BeLLM Figure 2: per-sentence pivot-token Spearman, one box per model, means as diamonds."""
    models = list(dict.fromkeys(data["model"]))
    groups = [data.loc[data["model"] == m, "spearman"].dropna() for m in models]
    boxes = ax.boxplot(groups, patch_artist=True, showmeans=True, widths=0.6, flierprops={"markersize": 1},
                       meanprops={"marker": "D", "markerfacecolor": "white", "markeredgecolor": "black", "markersize": 3})
    for patch, m in zip(boxes["boxes"], models, strict=True):
        patch.set(facecolor=colours[m], label=legend_label(m))
    ax.set_xticks(range(1, len(models) + 1), [f"mean {g.mean():.2f}" for g in groups])
    ax.set(ylabel="pivot-token Spearman (per sentence)")


def _knn(ax, data, colours):
    """Mean kNN accuracy over the labelled sets per transform/metric, with an error bar of one standard error of
    that mean: sqrt(sum of the sets' squared binomial standard errors) / number of sets (the sets' test points
    are independent), from the ``stderr`` column ``embench analyze knn`` writes."""
    data = data.assign(setting=data["transform"] + "/" + data["metric"], variance=data["stderr"] ** 2)
    settings = list(dict.fromkeys(data["setting"]))
    models = list(dict.fromkeys(data["model"]))
    width = 0.8 / max(len(models), 1)
    for j, m in enumerate(models):
        g = data[data["model"] == m].groupby("setting", sort=False).agg(
            accuracy=("accuracy", "mean"), variance=("variance", "sum"), n=("accuracy", "size"))
        xs = [settings.index(s) + j * width for s in g.index]
        ax.bar(xs, 100 * g["accuracy"], width=width, yerr=100 * np.sqrt(g["variance"]) / g["n"], color=colours[m], label=legend_label(m),
               error_kw={"lw": 0.8, "capsize": 1.5})
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(settings))], settings, rotation=30, ha="right")
    ax.set(ylabel="kNN accuracy (%, mean over sets)")


def _training_metric(column: str | None, prefix: str = "eval/", skip: str | None = None, as_score: bool = True):
    """Training curves of every run that logged ``column`` (None: the first logged column that starts with
    ``prefix`` and not with ``skip``; ``embench train`` logs evaluations as ``eval/<task or analysis spec>``).
    ``as_score``: a metric whose values all lie in [-1, 1] (a correlation, an accuracy) is shown x100, as every
    table shows scores; a loss, or an analysis number outside that range, is shown as logged."""
    def draw(ax, data, colours):
        from matplotlib.ticker import MaxNLocator

        metric = column or next((c for c in data.columns if c.startswith(prefix) and not (skip and c.startswith(skip))
                                 and data[c].notna().any()), None)
        if metric is None or metric not in data:
            raise EmbenchError(f"no run logged an evaluation metric {prefix}... (train with --eval-steps N and "
                               f"{'--eval-analysis knn:DATASET' if 'knn' in prefix else '--eval-task TASK'})")
        scale = 100 if as_score and data[metric].dropna().abs().le(1).all() else 1
        for m, g in data.groupby("model", sort=False):
            g = g.dropna(subset=[metric])
            if len(g):  # runs that never logged it get no line and no legend entry
                ax.plot(g["step"], scale * g[metric], marker="o" if len(g) < 30 else None, color=colours[m], label=legend_label(m))
        label = metric.removeprefix("eval/")
        # a spec with options (knn:datasets=...,limit=2000) is too long for an axis: its name only (the
        # options are in the run's train_config.json)
        label = label if len(label) <= 24 else label.split(":")[0]
        ax.set(xlabel="training step", ylabel=label + (" (x100)" if scale != 1 else ""))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
    return draw


COMPOSERS: dict[str, Composer] = {
    "spectrum": Composer("spectrum.csv", _spectrum, "embench analyze spectrum -m {model} --out {name}",
                         "Singular value spectra (SimCSE Figure F.1)", columns=("index", "normalised")),
    "alignment-uniformity": Composer("alignment_uniformity.csv", alignment_uniformity,
                                     "embench analyze alignment-uniformity -m {model} --out {name}",
                                     "Alignment vs uniformity, lower is better on both axes; bars: one standard error "
                                     "(jackknife) (SimCSE Figure 2)", columns=("uniformity", "alignment", "step")),
    "cosine-density": Composer("cosine_density_pairs.csv", _density, "embench analyze cosine-density -m {model} --out {name}",
                               "Cosine similarity of STS-B pairs per gold-score group, one panel per model (SimCSE Figure G.1)",
                               per_model=True, columns=("gold", "bin", "cosine")),
    "layers": Composer("layers.csv", _per_layer("stsb_spearman", "STS-B Spearman"), "embench analyze layers -m {model} --out {name}",
                       "STS-B Spearman per layer (cropping paper, layer-wise curves)", columns=("layer", "stsb_spearman")),
    "cls-energy": Composer("cls_energy.csv", _per_layer("cls_energy", "E_CLS"), "embench analyze cls-energy -m {model} --out {name}",
                           "E_CLS per layer (JTCSE)", columns=("layer", "cls_energy")),
    "attention-sinks": Composer("attention_sinks.csv", _per_layer("cls_share", "attention to [CLS]"),
                                "embench analyze attention -m {model} --out {name}", "Share of attention to [CLS] per layer (JTCSE)",
                                columns=("layer", "cls_share")),
    # BeLLM Figure 4: STS-B Spearman against the number of layers kept (removed from the top)
    "layer-removal": Composer("layer_removal.csv", _per_layer("stsb_spearman", "STS-B Spearman (x100)", x="layers_kept", scale=100,
                                                              markersize=3, xlabel="layers kept (the rest removed from the top)"),
                              "embench analyze layer-removal -m {model} --out {name}",
                              "STS-B Spearman as layers are removed from the top (BeLLM Figure 4)",
                              columns=("layers_kept", "stsb_spearman")),
    "token-dependency": Composer("token_dependency.csv", _token_dependency, "embench analyze token-dependency -m {model} --out {name}",
                                 "Pivot-token dependency per sentence (BeLLM Figure 2)", columns=("spearman",)),
    "knn": Composer("knn.csv", _knn, "embench analyze knn -m {model} --out {name}",
                    "kNN accuracy per transform and metric; bars: one standard error (cropping paper Table S3)",
                    columns=("transform", "metric", "accuracy", "stderr")),
    "training-loss": Composer("*metrics.jsonl", _training_metric("loss", as_score=False), "embench train ... --out {name} (its metrics.jsonl)",
                              "Training loss of embench runs"),
    "training-eval": Composer("*metrics.jsonl", _training_metric(None, skip="eval/knn"), "embench train ... --eval-steps N --out {name}",
                              "Evaluation during training (embench runs with --eval-steps)"),
    "training-knn": Composer("*metrics.jsonl", _training_metric(None, prefix="eval/knn"),
                             "embench train ... --eval-steps N --eval-analysis knn:DATASET --out {name}",
                             "kNN accuracy during training (cropping paper Figures 1 and 3)"),
}


def composer(name: str) -> Composer:
    """The composer of figure ``name``; an unknown name is an error naming the nearest figures."""
    if name not in COMPOSERS:
        raise UnknownNameError("figure", name, list(COMPOSERS), nearest(name, list(COMPOSERS)))
    return COMPOSERS[name]


def compose(name: str, folders: Sequence[Path | str], out: Path | str, models: Sequence[str] = (),
            colours: dict[str, tuple] | None = None, names: Mapping[str, str] | None = None) -> list[Path]:
    """Draw figure ``name`` (a key of :data:`COMPOSERS`) from the outputs under ``folders`` into
    ``out/<name>.png`` and ``.pdf``. ``models``: the models to draw, in this order, each matching a model found as
    ``report -m`` matches records (:func:`~embench.report.model_match.same_model`; default: every model found);
    ``colours``: a colour per model given (or found); ``names``: ``--name``'s labels for the legends."""
    c = composer(name)
    data = read_output(folders, c.file, ("model", *c.columns))
    found = list(dict.fromkeys(data["model"]))
    missing = [m for m in models if not any(same_model(f, m) for f in found)]
    if missing:
        where = ", ".join(map(str, folders))
        hint = c.makes.format(model=missing[0], name=f"{Path(str(folders[0])) / name}")
        raise EmbenchError(f"figure {name}: no {c.file} for {'model' if len(missing) == 1 else 'models'} {', '.join(missing)} under {where} "
                           f"(found: {', '.join(found) or 'none'}); make it with `{hint}`")
    if not found:  # no model at all: an empty figure was drawn, and the command exited 0
        where = ", ".join(map(str, folders))
        hint = c.makes.format(model="MODEL", name=f"{Path(str(folders[0])) / name}")
        raise EmbenchError(f"figure {name}: no {c.file} under {where}; make it with `{hint}`")
    # each model found -> the one asked for that it is (its colour), in the order asked
    asked = {f: next((m for m in models if same_model(f, m)), None) if models else f for f in found}
    kept = sorted((f for f in found if asked[f] is not None), key=lambda f: list(models).index(asked[f]) if models else 0)
    colours = {**model_colours(list(dict.fromkeys(asked[f] for f in kept))), **(colours or {})}
    labels = model_labels(kept, names)
    if len(set(labels.values())) < len(kept):  # two models' lines under one legend entry
        twice = [label for label in labels.values() if list(labels.values()).count(label) > 1]
        raise EmbenchError(f"figure {name}: --name gives the models {', '.join(f for f in kept if labels[f] in twice)} "
                           f"the label {twice[0]!r}; give each model its own name")
    rank = {f: i for i, f in enumerate(kept)}
    data = data[data["model"].isin(kept)].sort_values("model", key=lambda s: s.map(rank), kind="stable")
    data = data.assign(model=data["model"].map(labels))  # drawn and in the legend by the name given
    colours = {labels[f]: colours[asked[f]] for f in kept}
    with paper_style():
        if c.per_model:  # the panels' titles name the models: no legend
            fig, axes = figure(ncols=len(kept), sharey=True)
            c.draw(axes[0], data, colours)
        else:
            fig, axes = figure()
            c.draw(axes[0][0], data, colours)
            # the legend above the panel, where it covers no data
            axes[0][0].legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2)
        return save(fig, out, name.replace("-", "_"))
