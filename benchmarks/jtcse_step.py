"""The cost of one JTCSE step against its peer: two independent unsupervised-SimCSE steps.

JTCSE trains two towers; without cross-attention and extra losses a step IS two SimCSE steps
(``tests/test_jtcse_twin.py``). This measures, on the same sentences, batch, maximum length and
thread count: the peer (each tower's unsup-SimCSE loss, backward and AdamW step, one after the
other), JTCSE without cross-attention (Eq. 15: + L_ICNCE + L_ICTM on the pooler), and JTCSE with
half the layers as cross-attention layers. Each configuration runs in its own process (so its peak
resident memory is its own), ``--warmup`` steps then ``--steps`` timed steps; the median step time
is compared with the peer's.

    python benchmarks/jtcse_step.py --model all-MiniLM-L6-v2 --batch-size 32 --max-length 32 --steps 8 \
        --out reports/jtcse/benchmark.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing as mp
import os
import platform
import random
import resource
import statistics
import time
from pathlib import Path


def sentences(n: int) -> list[str]:
    root = Path(os.environ.get("EMBENCH_DATA", "~/.cache/embench/data")).expanduser()
    with gzip.open(root / "corpora" / "wiki1m-prefix.txt.gz", "rt", encoding="utf-8") as f:
        out = [line.strip() for line in f if line.strip()]
    return out[:n]


def _run(kind: str, args: dict, queue) -> None:
    import torch

    from embench.train import METHODS, make_config, resolve
    from embench.train.distributed import DistInfo

    torch.set_num_threads(args["threads"])
    texts = sentences(args["batch_size"] * (args["steps"] + args["warmup"]))
    common = {"model": args["model"], "max_length": args["max_length"], "device": "cpu"}
    if kind == "peer: 2 x unsup-SimCSE":
        runs = []
        for _ in range(2):
            m = METHODS.get("unsup-simcse")(resolve(make_config(method="unsup-simcse", mlp="none", **common)))
            model = m.build("cpu").train()
            runs.append((m, model, torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)))
    else:
        cross = 0 if "no cross" in kind else None  # None: half the layers
        m = METHODS.get("jtcse")(resolve(make_config(method="jtcse", cross_layers=cross, **common)))
        model = m.build("cpu").train()
        runs = [(m, model, torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5))]
    times = []
    b = args["batch_size"]
    for step in range(args["warmup"] + args["steps"]):
        idx = list(range(step * b, (step + 1) * b))
        start = time.perf_counter()
        for method, model, opt in runs:
            opt.zero_grad(set_to_none=True)
            loss, _ = method.loss(model, method.batch(texts, idx, random.Random(step)), DistInfo())
            loss.backward()
            opt.step()
        if step >= args["warmup"]:
            times.append(time.perf_counter() - start)
    queue.put({"median_step_s": statistics.median(times), "steps": len(times),
               "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=32)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path)
    args = vars(ap.parse_args())
    ctx = mp.get_context("spawn")
    results = {}
    for kind in ("peer: 2 x unsup-SimCSE", "jtcse, no cross-attention", "jtcse, cross-attention in half the layers"):
        q = ctx.Queue()
        p = ctx.Process(target=_run, args=(kind, {k: v for k, v in args.items() if k != "out"}, q))
        p.start()
        results[kind] = q.get()
        p.join()
        print(kind, results[kind], flush=True)
    peer = results["peer: 2 x unsup-SimCSE"]["median_step_s"]
    for r in results.values():
        r["time_ratio_to_peer"] = round(r["median_step_s"] / peer, 3)
    report = {"settings": {k: v for k, v in args.items() if k != "out"}, "machine": platform.processor() or platform.machine(),
              "cpus": os.cpu_count(), "results": results}
    print(json.dumps(report, indent=2))
    if args["out"]:
        args["out"].parent.mkdir(parents=True, exist_ok=True)
        args["out"].write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
