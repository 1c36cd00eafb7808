"""One training pass in length buckets (``--set bucket_tokens``, default 8192) against the same pass padded whole
(``bucket_tokens=0``), and the buckets' cuts against each other (``--set bucket_min_tokens``: 8192, the fewest
buckets; 2048, the default, smaller buckets where the lengths vary), on the recipes whose pass exceeds a bucket:
seconds a step, real and padded tokens a step, how ``--auto-fit`` ran the step, and on a GPU the peak memory of
each run. The losses are those of the same batches under other dropout masks (drawn bucket by bucket): that the
update is the same is the tests' to show (``tests/test_length_buckets.py``, dropout off).

    EMBENCH_DATA=... python benchmarks/length_buckets.py --model all-MiniLM-L6-v2 --recipes simcse-sup,crop \
        --settings 0,8192/8192,8192/2048 --steps 2 --repeats 2 --out reports/training/length_buckets

Each recipe runs as ``embench train --recipe NAME --model MODEL`` would, evaluation and saving off; the settings
(``bucket_tokens/bucket_min_tokens``, the first one the reference) alternate ``--repeats`` times in one process and
the medians of the steps after ``--warmup`` are compared.
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


def setting_name(bucket_tokens: int, floor: int) -> str:
    return "whole" if not bucket_tokens else f"{bucket_tokens}/{floor}"


def parse_settings(text: str) -> list[tuple[int, int]]:
    """``0,8192/8192,8192/2048``: bucket_tokens and, after a slash, bucket_min_tokens (default: a quarter) of each run."""
    out = []
    for part in text.split(","):
        tokens, _, floor = part.partition("/")
        out.append((int(tokens), int(floor) if floor else int(tokens) // 4))
    return out


def run(recipe: str, setting: tuple[int, int], args, tmp: Path) -> dict:
    from embench.train import Trainer, make_config

    bucket_tokens, floor = setting
    if args.device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    cfg = make_config(recipe=recipe, model=args.model, max_steps=args.warmup + args.steps, eval_steps=0,
                      save_steps=10**9, log_steps=1, progress=False, device=args.device, overwrite=True,
                      out=str(tmp / f"{recipe}-{bucket_tokens}-{floor}"), bucket_tokens=bucket_tokens,
                      bucket_min_tokens=floor, **({"data_root": args.data} if args.data else {}))
    start = time.perf_counter()
    trainer = Trainer(cfg)
    result = trainer.fit()
    hist = [h for h in result.history if "steps_per_s" in h]
    timed = hist[args.warmup:]
    sps = statistics.median(h["steps_per_s"] for h in timed)
    return {"recipe": recipe, "setting": setting_name(*setting), "bucket_tokens": bucket_tokens,
            "bucket_min_tokens": floor, "batch_size": cfg.batch_size, "max_length": cfg.max_length,
            "s_per_step": 1 / sps, "real_tokens_per_step": statistics.median(h["tokens_per_s"] / h["steps_per_s"] for h in timed),
            "padded_tokens_per_step": statistics.median(h["padded_tokens_per_s"] / h["steps_per_s"] for h in timed),
            "losses": [h["loss"] for h in hist], "peak_memory_gib": peak_memory_gib(args.device),
            "fit": trainer.step_fit.describe(cfg.batch_size),  # --auto-fit's choice: a split or checkpointing, if any
            "wall_s": time.perf_counter() - start}


def summary(rows: list[dict]) -> dict:
    """Per recipe and setting: the median s/step, its speed-up over the first setting, the tokens of its first run."""
    out = {}
    for recipe in dict.fromkeys(r["recipe"] for r in rows):
        mine = [r for r in rows if r["recipe"] == recipe]
        by = {name: [r for r in mine if r["setting"] == name] for name in dict.fromkeys(r["setting"] for r in mine)}
        med = {name: statistics.median(r["s_per_step"] for r in v) for name, v in by.items()}
        first = next(iter(med.values()))
        out[recipe] = {name: {"s_per_step": med[name], "speedup": first / med[name],
                              "padded_tokens": v[0]["padded_tokens_per_step"], "real_tokens": v[0]["real_tokens_per_step"]}
                       for name, v in by.items()}
    return out


def markdown(result: dict) -> str:
    names = list(next(iter(result["summary"].values())))
    lines = [f"# One training pass in length buckets against the pass padded whole ({result['device']})", "",
             f"`benchmarks/length_buckets.py`, model `{result['model']}`, {result['steps']} timed steps after "
             f"{result['warmup']} of warm-up, the settings alternated {result['repeats']} times in one process "
             f"(torch {result['torch']}, {result['threads']} threads). A setting is `bucket_tokens/bucket_min_tokens`; "
             "medians of seconds a step, the speed-up over the first setting, and padded tokens a step of the first run "
             "of each setting (the same batches; real tokens in brackets).", "",
             "| recipe | batch x max length | " + " | ".join(f"{n}: s/step (speed-up), padded" for n in names) + " |",
             "|---|---|" + "---:|" * len(names)]
    for recipe, s in result["summary"].items():
        row = next(r for r in result["rows"] if r["recipe"] == recipe)
        cells = [f"{c['s_per_step']:.2f} ({c['speedup']:.2f}x), {c['padded_tokens']:,.0f}" for c in s.values()]
        real = next(iter(s.values()))["real_tokens"]
        lines.append(f"| {recipe} | {row['batch_size']} x {row['max_length']} ({real:,.0f} real) | " + " | ".join(cells) + " |")
    lines += ["", "Every run (how its step ran: `--auto-fit`'s choice from the memory the run saw):", "",
              "| recipe | setting | how the step ran | s/step | padded tokens | peak memory GiB |", "|---|---|---|---:|---:|---:|"]
    lines += [f"| {r['recipe']} | {r['setting']} | {r.get('fit', '')} | {r['s_per_step']:.2f} | {r['padded_tokens_per_step']:,.0f} | "
              f"{'—' if r['peak_memory_gib'] is None else format(r['peak_memory_gib'], '.2f')} |" for r in result["rows"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--recipes", default="simcse-sup,crop")
    ap.add_argument("--settings", default="0,8192/8192,8192/2048",
                    help="bucket_tokens/bucket_min_tokens of each run, the first the reference (0: padded whole)")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--data", default=None, help="data root (default: EMBENCH_DATA)")
    ap.add_argument("--out", type=Path, required=True, help="OUT.json and OUT.md are written")
    args = ap.parse_args(argv)
    settings, rows = parse_settings(args.settings), []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeats):
            for recipe in args.recipes.split(","):
                for setting in settings:
                    rows.append(run(recipe, setting, args, Path(tmp)))
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
