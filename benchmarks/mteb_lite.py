"""Wall time of ``mteb-lite`` on CPU, and what the shared embedding cache saves when ``sts-all`` ran first.

Two phases, each with a fresh embedding cache (run them one after the other, or in two processes):

* ``cold``: ``mteb-lite`` (or ``--tasks``) with an empty cache: per-task wall time and texts encoded;
* ``shared``: ``sts-all`` under MTEB's text protocol (``--text raw --sick-split full``) into an empty
  cache, then the same MTEB tasks with that cache: what is read from the cache instead of encoded.

    nice -n 10 python benchmarks/mteb_lite.py --phase cold --out cold.json
    nice -n 10 python benchmarks/mteb_lite.py --phase shared --tasks STS --out shared.json
    python benchmarks/mteb_lite.py --summary cold.json shared.json

``--tasks STS`` keeps the seven MTEB STS tasks (the only ones whose texts ``sts-all`` encodes);
the other tasks read nothing from that cache (``texts_from_cache`` shows it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

STS = ["MTEB:STS12", "MTEB:STS13", "MTEB:STS14", "MTEB:STS15", "MTEB:STS16", "MTEB:STSBenchmark", "MTEB:SICK-R"]


def run_suite(model, tasks, cache, results, **protocol):
    from embench.api import evaluate

    rows = []

    def on_task(name, status, record):
        p = record.provenance
        rows.append({
            "task": name, "main_score": record.main_score, "wall_seconds": p.get("wall_seconds"),
            "texts_encoded": p.get("texts_encoded"), "texts_from_cache": p.get("texts_from_cache"),
            "data_differences": record.scores.get("data_differences", []),
        })
        print(f"  {name:<36} {100 * record.main_score:6.2f}  {p.get('wall_seconds', 0):7.1f}s  "
              f"encoded {p.get('texts_encoded')}  cached {p.get('texts_from_cache')}", flush=True)

    start = time.perf_counter()
    ev = evaluate(model, None if tasks else "mteb-lite", tasks=tasks, cache_dir=cache, results_dir=results,
                  overwrite=True, on_task=on_task, **protocol)
    return {"wall_seconds": round(time.perf_counter() - start, 1), "tasks": rows, "engine": ev.encode_stats}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--phase", choices=["cold", "shared"])
    ap.add_argument("--tasks", nargs="*", help="MTEB task names (default: all of mteb-lite); 'STS' = the seven STS tasks")
    ap.add_argument("--results-dir", type=Path, help="keep the records here (default: a temporary folder)")
    ap.add_argument("--cache", type=Path, help="use this embedding cache instead of an empty temporary one")
    ap.add_argument("--out", type=Path, help="write the measurements as JSON")
    ap.add_argument("--summary", nargs=2, type=Path, metavar=("COLD", "SHARED"), help="compare two phase files")
    args = ap.parse_args()
    if args.summary:
        summarise(*args.summary)
        return
    tasks = STS if args.tasks == ["STS"] else ([t if t.startswith("MTEB:") else "MTEB:" + t for t in args.tasks] if args.tasks else None)
    import torch

    out = {"model": args.model, "phase": args.phase, "machine": platform.processor() or platform.machine(),
           "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(), "nice": os.nice(0)}
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache or Path(tmp) / "cache"
        results = args.results_dir or Path(tmp) / "results"
        if args.phase == "shared":
            print(f"sts-all (text raw, sick full) into {'the given' if args.cache else 'an empty'} cache:", flush=True)
            out["sts_all"] = run_suite(args.model, ["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness"],
                                       cache, results, text="raw", sick_split="full")
        print(f"MTEB tasks ({args.phase} cache):", flush=True)
        out["mteb"] = run_suite(args.model, tasks, cache, results)
    text = json.dumps(out, indent=2, default=str)
    if args.out:
        args.out.write_text(text + "\n")
    print(f"total {out['mteb']['wall_seconds']}s")


def summarise(cold_path: Path, shared_path: Path) -> None:
    cold, shared = json.loads(cold_path.read_text()), json.loads(shared_path.read_text())
    by_task = {r["task"]: r for r in cold["mteb"]["tasks"]}
    print(f"{'task':<36} {'cold s':>8} {'after sts-all s':>16} {'encoded cold':>13} {'encoded after':>14}")
    tc = tw = 0.0
    for r in shared["mteb"]["tasks"]:
        c = by_task.get(r["task"])
        if c is None:
            continue
        tc += c["wall_seconds"]
        tw += r["wall_seconds"]
        print(f"{r['task']:<36} {c['wall_seconds']:8.1f} {r['wall_seconds']:16.1f} {c['texts_encoded']:13d} {r['texts_encoded']:14d}")
    print(f"{'these tasks':<36} {tc:8.1f} {tw:16.1f}   saved {tc - tw:.1f}s ({100 * (tc - tw) / max(tc, 1e-9):.0f}%)")
    print(f"mteb-lite cold total: {cold['mteb']['wall_seconds']}s; sts-all (raw, full) itself: {shared['sts_all']['wall_seconds']}s")


if __name__ == "__main__":
    main()
