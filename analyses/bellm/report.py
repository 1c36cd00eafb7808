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
    return frame.pivot_table(index=["prompt", "K", "adapter"], columns="task", values="score").round(2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    parts = ["## STS (Spearman x 100)", sts_table(args.out / "results").to_markdown()]
    removal = args.out / "layer-removal" / "layer_removal.csv"
    if removal.is_file():
        f = pd.read_csv(removal)
        f["stsb_spearman"] = (100 * f["stsb_spearman"]).round(2)
        parts += ["## Layer removal (STS-B dev)", f[["layers_kept", "layers_removed", "final_norm", "stsb_spearman"]].to_markdown(index=False)]
    dep = args.out / "token-dependency" / "token_dependency_summary.csv"
    if dep.is_file():
        parts += ["## Token dependency", pd.read_csv(dep).round(4).to_markdown(index=False)]
    metrics = args.out / "lora" / "metrics.jsonl"
    if metrics.is_file():
        evals = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
        evals = [e for e in evals if any(k.startswith("eval") or "STSBenchmark" in k for k in e)]
        parts += ["## LoRA run: evaluations", pd.DataFrame(evals).to_markdown(index=False)]
    text = "\n\n".join(parts) + "\n"
    (args.out / "bellm.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
