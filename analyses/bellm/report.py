"""Tables of the BeLLM runs (analyses/bellm/run.sh) from the stored records and analysis outputs.

    python analyses/bellm/report.py --out OUT      # writes OUT/bellm.md and prints it
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

import embench
from embench.models.families import PROMPTS
from embench.report.tables import render

NAMES = {v: k for k, v in PROMPTS.items()}


def sts_table(results: Path) -> pd.DataFrame:
    """One row per (prompt, K, adapter), one column per task (Spearman x 100)."""
    rows = []
    for r in embench.results(results):
        enc = r.encoder
        split = (r.protocol or {}).get("stsb_split", "test") if r.task == "STSBenchmark" else "test"
        rows.append({"prompt": NAMES.get(enc.get("prompt"), enc.get("prompt")), "K": enc.get("bidirectional_last", 0),
                     "adapter": enc.get("adapter", ""), "task": f"{r.display} ({split})", "score": 100 * r.main_score})
    frame = pd.DataFrame(rows)
    table = frame.pivot_table(index=["prompt", "K", "adapter"], columns="task", values="score")
    order = [f"{t} (test)" for t in ("STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R")]
    table = table[[c for c in order if c in table] + [c for c in table if c not in order]]  # sts-all's order
    if all(c in table for c in order):  # the seven tasks' average where a row has all seven
        table["Avg. (7)"] = table[order].mean(axis=1, skipna=False)
    return table.round(2)


def md(frame: pd.DataFrame) -> str:
    """A markdown table of the values as they are (embench's renderer, no x100 scaling)."""
    return render(frame.set_index(frame.columns[0]), "markdown", scaled=[])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    parts = ["## STS (Spearman x 100)", md(sts_table(args.out / "results").reset_index())]
    removal = args.out / "layer-removal" / "layer_removal.csv"
    if removal.is_file():
        f = pd.read_csv(removal)
        f["stsb_spearman"] = (100 * f["stsb_spearman"]).round(2)
        parts += ["## Layer removal (STS-B dev)", md(f[["layers_kept", "layers_removed", "final_norm", "stsb_spearman"]])]
    dep = args.out / "token-dependency" / "token_dependency_summary.csv"
    if dep.is_file():
        parts += ["## Token dependency", md(pd.read_csv(dep).round(4))]
    metrics = args.out / "lora" / "metrics.jsonl"
    if metrics.is_file():
        evals = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
        evals = [e for e in evals if any(k.startswith("eval") or "STSBenchmark" in k for k in e)]
        parts += ["## LoRA run: evaluations", md(pd.DataFrame(evals))]
    text = "\n\n".join(parts) + "\n"
    (args.out / "bellm.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
