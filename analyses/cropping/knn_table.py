"""The cropping paper's kNN table (Table S3: raw / centred / whitened x Euclidean / cosine) from the CSV
that `embench analyze knn` writes, as a paper table through embench's report machinery.

    python analyses/cropping/knn_table.py KNN_CSV OUT_STEM [--caption TEXT]

writes OUT_STEM.tex (a compilable document), OUT_STEM.md and OUT_STEM.csv: one row per model and
transform/metric, one column per dataset, Avg. recomputed, best bold and second underlined per column.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from embench.report.paper import PaperTable
from embench.report.paper_render import latex_document, render_tables


def knn_table(csv: Path, caption: str) -> PaperTable:
    frame = pd.read_csv(csv)
    frame["row"] = frame["model"] + " / " + frame["transform"] + ", " + frame["metric"]
    table = frame.pivot_table(index="row", columns="dataset", values="accuracy", sort=False)
    table["Avg."] = table.mean(axis=1)
    table.index.name = "Model / embeddings, distance"
    settings = frame.iloc[0]
    mode = settings.get("mode", "split") if "mode" in frame else "split"
    split = ("train split -> test split" if mode == "train-test" else
             f"{1 - settings['test_size']:.0%}:{settings['test_size']:.0%} split, seed {settings['seed']}, "
             f"{'stratified' if settings['stratify'] else 'unstratified'}")
    protocol = {"k": int(settings["k"]), "split": split, "test points": ", ".join(
        f"{d} {n}" for d, n in frame.groupby("dataset", sort=False)["n_test"].first().items())}
    return PaperTable("knn", table, protocol, caption=caption)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--caption", default="kNN accuracy (k = 10) x100, cropping paper Table S3's layout")
    args = ap.parse_args()
    table = knn_table(args.csv, args.caption)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".tex").write_text(latex_document([table]))
    args.out.with_suffix(".md").write_text(render_tables([table], "markdown"))
    args.out.with_suffix(".csv").write_text(render_tables([table], "csv"))


if __name__ == "__main__":
    main()
