"""sts-all and E_CLS of several models, as one table, and the E_CLS-versus-STS scatter (JTCSE Fig. 10).

    python analyses/jtcse/report.py --out OUT --model "LABEL=MODEL" [--model ...] [--limit 300]

MODEL is anything ``embench`` loads (a name, a folder, ``ensemble:A+B``, a ``jtcse`` output folder),
optionally ``MODEL#POOLING`` to choose its pooling. Writes into OUT: ``results/`` (the stored STS
records), ``cls-energy/`` (Eq. 6 per layer; an ensemble's towers one by one and their mean),
``table.md`` / ``table.csv`` (STS x100 under SimCSE's protocol, Avg., mean E_CLS over layers) and
``ecls_vs_sts.{pdf,png}`` (with Spearman's rho over the models).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
from scipy.stats import spearmanr

import embench
from embench.analysis import run as run_analysis
from embench.report import style
from embench.report.tables import render


def parse_model(item: str) -> tuple[str, str, str | None]:
    label, sep, spec = item.partition("=")
    if not sep or not label or not spec:
        raise SystemExit(f"--model {item!r}: expected LABEL=MODEL")
    spec, _, pooling = spec.partition("#")
    return label, spec, pooling or None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--model", action="append", required=True, help="LABEL=MODEL[#POOLING]; repeatable")
    ap.add_argument("--limit", type=int, default=300, help="STS-B test sentences for E_CLS")
    args = ap.parse_args()
    models = [parse_model(m) for m in args.model]
    rows = []
    for label, spec, pooling in models:
        ev = embench.evaluate(spec, "sts-all", results_dir=args.out / "results", pooling=pooling, progress=False)
        row = ev.frame.iloc[0].to_dict()  # fractions; shown x100
        rows.append({"model": label, **row})
        print(label, {k: round(100 * v, 2) for k, v in row.items()}, flush=True)
    table = pd.DataFrame(rows).set_index("model")
    energy = {}
    for label, spec, _ in models:  # one at a time: each may carry its own pooling option (E_CLS does not read it)
        res = run_analysis("cls-energy", [spec], args.out / "cls-energy" / slug(label), labels=[label], limit=args.limit)
        summary = res.tables["cls_energy_summary"].set_index("model")["mean_over_layers"]
        energy[label] = float(summary.loc[label])
        for name, value in summary.items():
            if name != label:  # an ensemble's towers, one by one
                energy[name] = float(value)
    sts = list(table.columns)
    shown = (table * 100).round(2)
    table["E_CLS"] = [round(energy[m], 4) for m in table.index]
    shown["E_CLS"] = table["E_CLS"]
    shown.to_csv(args.out / "table.csv")
    text = render(table, "markdown", scaled=sts, highlight=True)
    towers = {k: round(v, 4) for k, v in energy.items() if k not in table.index}
    if towers:  # each tower of an ensemble row (the row's E_CLS is their mean)
        text += "\n\n| tower | E_CLS |\n|---|---|\n" + "".join(f"| {k} | {v:.4f} |\n" for k, v in towers.items())
    (args.out / "table.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    table["Avg."] = shown["Avg."]
    rho = spearmanr(table["E_CLS"], table["Avg."]).statistic if len(table) > 2 else float("nan")
    with style.paper_style():
        fig, axes = style.figure()
        ax = axes[0, 0]
        for c, (name, r) in zip(style.palette(len(table)), table.iterrows(), strict=True):
            ax.scatter(r["E_CLS"], r["Avg."], color=c, label=name)
        ax.set_xlabel(r"mean CLS energy weight $E_{\mathrm{CLS}}$ (Eq. 6)")
        ax.set_ylabel("7-STS average (x100)")
        ax.set_title(f"Spearman rho over {len(table)} models: {rho:.2f}")
        ax.legend(loc="best", fontsize=5)
        style.save(fig, args.out, "ecls_vs_sts")
    print(f"Spearman rho(E_CLS, Avg.) over {len(table)} models: {rho:.3f}")


def slug(label: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in label).strip("-").lower()


if __name__ == "__main__":
    main()
