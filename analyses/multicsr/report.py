"""Tables of the MultiCSR runs (analyses/multicsr/run.sh) from their outputs.

    python analyses/multicsr/report.py --out OUT      # writes OUT/multicsr.md and prints it

Besides counts and times, it puts the generations beside the gold SNLI hypotheses of the same premises
(the data root's, which the generator never saw) under one cheap automatic proxy: all-MiniLM-L6-v2's
cosine of each hypothesis with its premise, and how often a hypothesis merely repeats its premise.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

import embench
from embench.data.root import DataRoot
from embench.data.training_sets import snli_triplets


def markdown(frame: pd.DataFrame) -> str:
    """A pipe table (pandas' to_markdown needs tabulate, which embench does not depend on)."""
    def cell(v) -> str:
        if isinstance(v, float):
            return "-" if np.isnan(v) else f"{v:.4g}"
        return str(v).replace("\n", " / ").replace("|", "\\|")

    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---:" if pd.api.types.is_numeric_dtype(frame[c]) else "---" for c in frame.columns) + "|"
    return "\n".join([head, rule, *("| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False))])


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", s.lower()).strip()


def generation_table(out: Path) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """Per triplet file (contrastive, plain) and the gold SNLI hypotheses: time, proxy cosines, copies."""
    enc = embench.load_model("all-MiniLM-L6-v2")
    frames = {name: pd.read_csv(out / f"{name}.csv", keep_default_na=False)
              for name in ("triplets", "triplets-plain") if (out / f"{name}.csv").is_file()}
    if not frames:
        return pd.DataFrame(), {}
    keys = frames["triplets"]["key"].tolist()
    gold = snli_triplets(DataRoot.resolve(None))
    frames["gold SNLI"] = pd.DataFrame([{"sent0": gold[k - 1][0], "sent1": gold[k - 1][1], "hard_neg": gold[k - 1][2], "key": k}
                                        for k in keys])
    texts = sorted({t for f in frames.values() for col in ("sent0", "sent1", "hard_neg") for t in f[col] if t})
    vec = dict(zip(texts, enc.encode(texts, normalize=True), strict=True))

    def cos(a: str, b: str) -> float:
        return float(vec[a] @ vec[b]) if a and b else np.nan

    rows = []
    for name, f in frames.items():
        meta = out / f"{name}.csv.json"
        totals = json.loads(meta.read_text())["totals"] if meta.is_file() else {}
        ce = np.array([cos(a, b) for a, b in zip(f.sent0, f.sent1, strict=True)])
        cc = np.array([cos(a, b) for a, b in zip(f.sent0, f.hard_neg, strict=True)])
        rows.append({
            "triplets": name if name == "gold SNLI" else f"{name}.csv" + (" (contrastive, omega 0.3)" if name == "triplets" else " (plain)"),
            "rows": len(f), "s / triplet": (totals["seconds"] / totals["rows"]) if totals.get("rows") else np.nan,
            "tokens / s": (totals["tokens"] / totals["seconds"]) if totals.get("seconds") else np.nan,
            "cos(premise, entailment)": np.nanmean(ce), "cos(premise, contradiction)": np.nanmean(cc),
            "margin (ent - con)": np.nanmean(ce - cc),
            "contradiction >= 0.9 cos": float(np.mean(cc >= 0.9)),
            "entailment = premise": float(np.mean([_norm(a) == _norm(b) for a, b in zip(f.sent0, f.sent1, strict=True)])),
            "contradiction = premise": float(np.mean([_norm(a) == _norm(b) for a, b in zip(f.sent0, f.hard_neg, strict=True)])),
            "empty": int(sum(1 for a, b in zip(f.sent1, f.hard_neg, strict=True) if not a or not b)),
        })
    return pd.DataFrame(rows).round(3), frames


def proxy(f: pd.DataFrame, enc) -> dict[str, float]:
    """MiniLM's cosines of each hypothesis with its premise, and how often a hypothesis repeats its premise."""
    texts = sorted({t for col in ("sent0", "sent1", "hard_neg") for t in f[col] if t})
    vec = dict(zip(texts, enc.encode(texts, normalize=True), strict=True))
    ce = np.array([float(vec[a] @ vec[b]) for a, b in zip(f.sent0, f.sent1, strict=True)])
    cc = np.array([float(vec[a] @ vec[b]) for a, b in zip(f.sent0, f.hard_neg, strict=True)])
    return {"cos(premise, entailment)": ce.mean(), "cos(premise, contradiction)": cc.mean(), "margin (ent - con)": (ce - cc).mean(),
            "contradiction >= 0.9 cos": float(np.mean(cc >= 0.9)),
            "contradiction = premise": float(np.mean([_norm(a) == _norm(b) for a, b in zip(f.sent0, f.hard_neg, strict=True)])),
            "entailment = premise": float(np.mean([_norm(a) == _norm(b) for a, b in zip(f.sent0, f.sent1, strict=True)]))}


def omega_table(out: Path) -> pd.DataFrame:
    """The first 32 premises under each omega: 0 (plain), 0.3 (the main run), the sweep's files."""
    files = {0.0: out / "triplets-plain.csv", 0.3: out / "triplets.csv"}
    files.update({float(p.stem.rsplit("-", 1)[1]): p for p in (out / "omega").glob("triplets-omega-*.csv")})
    if len(files) < 3:
        return pd.DataFrame()
    enc = embench.load_model("all-MiniLM-L6-v2")
    rows = []
    for w, path in sorted(files.items()):
        f = pd.read_csv(path, keep_default_na=False)
        f = f[f["key"] <= 32]
        rows.append({"omega": w, "premises": len(f), **proxy(f, enc)})
    return pd.DataFrame(rows)


def side_by_side(frames: dict[str, pd.DataFrame], n: int = 6) -> list[str]:
    """The first premises with the gold SNLI hypotheses and both generations."""
    if "triplets-plain" not in frames:
        return []
    lines = ["| premise | gold SNLI (E / C) | contrastive, omega 0.3 (E / C) | plain greedy (E / C) |", "|---|---|---|---|"]
    for i in range(min(n, len(frames["triplets"]))):
        cells = [frames["triplets"].sent0[i]]
        for name in ("gold SNLI", "triplets", "triplets-plain"):
            f = frames[name]
            cells.append(f"E: {f.sent1[i]} / C: {f.hard_neg[i]}")
        lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    return lines


def curation_tables(out: Path) -> list[str]:
    lines = []
    for stem in ("noprefix/kept", "kept", "kept-code"):
        summary = out / f"{stem}.summary.json"
        if not summary.is_file():
            continue
        s = json.loads(summary.read_text())
        st = s["settings"]
        lines += [f"### `{stem}.csv`: {st['rule']} rule, answer prefix {st['answer_prefix']!r}", "",
                  f"{s['kept']} of {s['total']} kept" + (f" ({s['swapped']} with roles swapped)" if s["swapped"] else ""), "",
                  "| outcome | triplets |", "|---|---:|", f"| kept | {s['kept']} |"]
        lines += [f"| dropped: {k} | {v} |" for k, v in s["dropped"].items()]
        ent, con = s["scores"]["entailment"], s["scores"]["contradiction"]
        if ent or con:
            lines += ["", "| score | a = score(premise, entailment) | b = score(premise, contradiction) |", "|---:|---:|---:|"]
            for v in sorted(set(ent) | set(con), key=float):
                lines.append(f"| {v} | {ent.get(v, 0)} | {con.get(v, 0)} |")
        lines.append("")
    return lines


def examples(out: Path, n: int = 4) -> list[str]:
    scores = out / "kept.scores.csv"
    if not scores.is_file():
        return []
    from embench.generate.rules import decide, parse_score

    f = pd.read_csv(scores, keep_default_na=False)
    lines = ["| premise | entailment (answer) | contradiction (answer) | paper rule |", "|---|---|---|---|"]
    shown = {"kept": 0, "dropped": 0}
    for r in f.itertuples():
        a, wa = parse_score(r.answer_entailment)
        b, wb = parse_score(r.answer_contradiction)
        d = decide("paper", a, b, 3, 3, 1, wa, wb)
        kind = "kept" if d.kept else "dropped"
        if shown[kind] >= n:
            continue
        shown[kind] += 1
        def flat(t: str) -> str:
            return t.strip().replace("\n", " / ").replace("|", "\\|")

        lines.append(f"| {flat(r.sent0)} | {flat(r.sent1)} (answer: {flat(r.answer_entailment)}) | {flat(r.hard_neg)} "
                     f"(answer: {flat(r.answer_contradiction)}) | {d.reason} |")
    return lines


def training_table(out: Path) -> pd.DataFrame:
    """STS-B dev of MiniLM and of each run, matched by the weights' fingerprint (runs with identical weights
    share one record), with the run's steps, loss and masked share."""
    by_fp = {r.encoder.get("fingerprint"): r for r in embench.results(out / "results")}
    models = {"all-MiniLM-L6-v2 (before)": "all-MiniLM-L6-v2"}
    models.update({d.name: str(d / "best") for d in sorted((out / "runs").iterdir()) if (d / "best").is_dir()})
    rows = []
    for name, path in models.items():
        r = by_fp.get(embench.load_model(path).fingerprint)
        row = {"model": name, "STS-B dev": f"{100 * r.main_score:.2f}" if r is not None else "-",
               "weights fingerprint": embench.load_model(path).fingerprint}
        metrics = out / "runs" / name / "metrics.jsonl"
        if metrics.is_file():
            recs = [json.loads(x) for x in metrics.read_text().splitlines() if x.strip()]
            pairs = [x["fn_masked_pairs"] for x in recs if "fn_masked_pairs" in x]
            row["steps"] = str(max((x.get("step", 0) for x in recs), default=0))
            row["pairs masked (all steps)"] = str(int(sum(pairs))) if pairs else "no mask"
            losses = [x["loss"] for x in recs if "loss" in x]
            row["loss first -> last"] = f"{losses[0]:.3f} -> {losses[-1]:.3f}" if losses else "-"
        rows.append(row)
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    out = ap.parse_args().out
    parts = ["# MultiCSR runs", "", "## Stage 1: generation", ""]
    gen, frames = generation_table(out)
    if len(gen):
        parts += [markdown(gen), "", "### The first premises", "", *side_by_side(frames), ""]
    omega = omega_table(out)
    if len(omega):
        parts += ["### omega (the first 32 premises)", "", markdown(omega), ""]
    parts += ["## Stage 2: self-curation", "", *curation_tables(out), "### Examples (kept.scores.csv)", "", *examples(out), ""]
    train = training_table(out) if (out / "results").is_dir() else pd.DataFrame()
    if len(train):
        parts += ["## Stage 3: training all-MiniLM-L6-v2", "", markdown(train), ""]
    for name in ("snli", "generated"):
        csv = out / "in-batch-similarity" / name / "in_batch_similarity.csv"
        if csv.is_file():
            f = pd.read_csv(csv).drop(columns=["per_batch_share"])
            f["train_data"] = [Path(str(x)).name for x in f["train_data"]]  # no path of this machine in the report
            parts += [f"## In-batch similarity ({name})", "", markdown(f.round(4)), ""]
    text = "\n".join(parts)
    (out / "multicsr.md").write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
