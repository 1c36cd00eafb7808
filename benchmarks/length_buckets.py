"""One training pass in length buckets (``--set bucket_tokens``, default 8192) against the same pass padded whole
(``bucket_tokens=0``), on the recipes whose pass exceeds a bucket: seconds a step, real and padded tokens a step,
and on a GPU the peak memory of each run. The losses are those of the same batches under other dropout masks
(drawn bucket by bucket): that the update is the same is the tests' to show (``tests/test_length_buckets.py``,
dropout off).

    EMBENCH_DATA=... python benchmarks/length_buckets.py --model all-MiniLM-L6-v2 --recipes simcse-sup,crop \
        --steps 4 --repeats 2 --out reports/training/length_buckets

Each recipe runs as ``embench train --recipe NAME --model MODEL`` would, evaluation and saving off; the two settings
alternate ``--repeats`` times in one process and the medians of the steps after ``--warmup`` are compared.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # embench from this checkout


def peak_memory_gib(device: str) -> float | None:
    """The run's peak on a GPU (reset before each run); None on a CPU, where the resident peak is the process's."""
    return torch.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else None


def run(recipe: str, bucket_tokens: int, args, tmp: Path) -> dict:
    from embench.train import Trainer, make_config

    if args.device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    cfg = make_config(recipe=recipe, model=args.model, max_steps=args.warmup + args.steps, eval_steps=0,
                      save_steps=10**9, log_steps=1, progress=False, device=args.device, out=str(tmp / f"{recipe}-{bucket_tokens}"),
                      bucket_tokens=bucket_tokens, **({"data_root": args.data} if args.data else {}))
    start = time.perf_counter()
    trainer = Trainer(cfg)
    result = trainer.fit()
    hist = [h for h in result.history if "steps_per_s" in h]
    timed = hist[args.warmup:]
    sps = statistics.median(h["steps_per_s"] for h in timed)
    return {"recipe": recipe, "bucket_tokens": bucket_tokens, "batch_size": cfg.batch_size, "max_length": cfg.max_length,
            "s_per_step": 1 / sps, "real_tokens_per_step": statistics.median(h["tokens_per_s"] / h["steps_per_s"] for h in timed),
            "padded_tokens_per_step": statistics.median(h["padded_tokens_per_s"] / h["steps_per_s"] for h in timed),
            "losses": [h["loss"] for h in hist], "peak_memory_gib": peak_memory_gib(args.device),
            "wall_s": time.perf_counter() - start}


def summary(rows: list[dict]) -> dict:
    out = {}
    for recipe in dict.fromkeys(r["recipe"] for r in rows):
        mine = [r for r in rows if r["recipe"] == recipe]
        by = {b: [r for r in mine if r["bucket_tokens"] == b] for b in dict.fromkeys(r["bucket_tokens"] for r in mine)}
        whole, cut = by[0], next(v for b, v in by.items() if b)
        med = {k: statistics.median(r["s_per_step"] for r in v) for k, v in (("whole", whole), ("buckets", cut))}
        out[recipe] = {"s_per_step_whole": med["whole"], "s_per_step_buckets": med["buckets"],
                       "speedup": med["whole"] / med["buckets"],
                       "padded_tokens_whole": whole[0]["padded_tokens_per_step"],
                       "padded_tokens_buckets": cut[0]["padded_tokens_per_step"],
                       "real_tokens": cut[0]["real_tokens_per_step"]}
    return out


def markdown(result: dict) -> str:
    lines = [f"# One training pass in length buckets against the pass padded whole ({result['device']})", "",
             f"`benchmarks/length_buckets.py`, model `{result['model']}`, {result['steps']} timed steps after "
             f"{result['warmup']} of warm-up, the two settings alternated {result['repeats']} times in one process "
             f"(torch {result['torch']}, {result['threads']} threads). Medians of seconds a step; tokens a step of the "
             "first run of each setting (the same batches).", "",
             "| recipe | batch x max length | s/step whole | s/step in buckets | speed-up | padded tokens a step, whole -> "
             "buckets (real) |", "|---|---|---:|---:|---:|---|"]
    for recipe, s in result["summary"].items():
        row = next(r for r in result["rows"] if r["recipe"] == recipe)
        lines.append(f"| {recipe} | {row['batch_size']} x {row['max_length']} | {s['s_per_step_whole']:.2f} | "
                     f"{s['s_per_step_buckets']:.2f} | {s['speedup']:.2f}x | {s['padded_tokens_whole']:,.0f} -> "
                     f"{s['padded_tokens_buckets']:,.0f} ({s['real_tokens']:,.0f}) |")
    lines += ["", "Every run:", "", "| recipe | bucket_tokens | s/step | peak memory GiB |", "|---|---:|---:|---:|"]
    lines += [f"| {r['recipe']} | {r['bucket_tokens']} | {r['s_per_step']:.2f} | "
              f"{'—' if r['peak_memory_gib'] is None else format(r['peak_memory_gib'], '.2f')} |" for r in result["rows"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--recipes", default="simcse-sup,crop")
    ap.add_argument("--bucket-tokens", type=int, default=8192)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--data", default=None, help="data root (default: EMBENCH_DATA)")
    ap.add_argument("--out", type=Path, required=True, help="OUT.json and OUT.md are written")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeats):
            for recipe in args.recipes.split(","):
                for bucket in (0, args.bucket_tokens):
                    rows.append(run(recipe, bucket, args, Path(tmp)))
                    print(json.dumps({k: v for k, v in rows[-1].items() if k != "losses"}), flush=True)
    result = {"device": torch.cuda.get_device_name() if args.device.startswith("cuda") else f"CPU ({platform.processor() or platform.machine()})",
              "model": args.model, "steps": args.steps, "warmup": args.warmup, "repeats": args.repeats,
              "torch": torch.__version__, "threads": torch.get_num_threads(), "rows": rows, "summary": summary(rows)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))
    return result


if __name__ == "__main__":
    main()
