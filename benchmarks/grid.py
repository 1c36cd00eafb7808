"""The same grid run serially (``embench run``, one model and protocol after another, as a user would
without a grid) and through ``embench grid`` with 1 and 2 local workers: wall time, CPU time, peak memory.

    python benchmarks/grid.py --out reports/grid/benchmark.json

Two models (all-MiniLM-L6-v2 and a random 4-layer BERT of hidden 256 with its tokenizer) x three STS
tasks x two protocols (SimCSE's; ``wmean`` + Pearson) = 12 cells. Every configuration starts from an
empty results folder and an empty embedding cache, in a fresh process whose children's CPU time and
peak resident memory (``RUSAGE_CHILDREN``: the largest single process) are reported; the serial run's
records and the 2-worker grid's are checked to be the same.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TASKS = ["STSBenchmark", "STS16", "STS13"]
PROTOCOLS = [{}, {"aggregation": "wmean", "correlation": "pearson"}]


def _run_commands(commands: list[list[str]]) -> None:
    """(In a fresh process.) Run the commands one after another; print the children's resource use."""
    for cmd in commands:
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"cpu_seconds": use.ru_utime + use.ru_stime, "peak_rss_mib": use.ru_maxrss / 1024}))


def measure(commands: list[list[str]]) -> dict:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--run-commands", json.dumps(commands)], check=True,
                         capture_output=True, text=True)
    return {"wall_seconds": round(time.perf_counter() - start, 2),
            **{k: round(v, 2) for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items()}}


def _records(folder: Path) -> dict[str, float]:
    return {str(p.relative_to(folder)): json.loads(p.read_text())["main_score"] for p in sorted(folder.glob("*/*.json"))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="write the figures here as JSON")
    ap.add_argument("--run-commands", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run_commands:
        _run_commands(json.loads(args.run_commands))
        return
    work = Path(tempfile.mkdtemp(prefix="embench-grid-bench-"))
    random_bert = work / "random-bert-4x256"
    subprocess.run([sys.executable, str(Path(__file__).parents[1] / "analyses/training/make_random_bert.py"),
                    str(random_bert), "--layers", "4", "--hidden", "256", "--heads", "4"], check=True, stdout=subprocess.DEVNULL)
    models = ["all-MiniLM-L6-v2", str(random_bert)]
    (work / "protocols.yaml").write_text("".join(
        "- {" + ", ".join(f"{k}: {v}" for k, v in p.items()) + "}\n" for p in PROTOCOLS))
    embench = [sys.executable, "-m", "embench.cli"]
    tasks = [x for t in TASKS for x in ("-t", t)]
    runs = {}
    serial = [[*embench, "run", "-m", m, *tasks, *(x for k, v in p.items() for x in (f"--{k}", v)), "-q",
               "--results-dir", str(work / "serial"), "--cache-dir", str(work / "cache-serial")]
              for m in models for p in PROTOCOLS]
    runs["serial embench run"] = measure(serial)
    for workers in (1, 2):
        runs[f"embench grid, {workers} worker(s)"] = measure([[
            *embench, "grid", *(x for m in models for x in ("--models", m)), *tasks, "--protocols",
            str(work / "protocols.yaml"), "--results", str(work / f"grid{workers}"), "--cache-dir",
            str(work / f"cache-grid{workers}"), "--workers", str(workers)]])
    serial_records, grid_records = _records(work / "serial"), _records(work / "grid2")
    same = sorted(serial_records) == sorted(grid_records)
    worst = max((abs(serial_records[k] - grid_records[k]) for k in serial_records), default=0.0) if same else None
    base = runs["serial embench run"]["wall_seconds"]
    for r in runs.values():
        r["wall_ratio_vs_serial"] = round(r["wall_seconds"] / base, 3)
    report = {"cells": len(models) * len(TASKS) * len(PROTOCOLS), "models": ["all-MiniLM-L6-v2", "random BERT 4x256"],
              "tasks": TASKS, "protocols": PROTOCOLS, "runs": runs, "same_record_files_serial_vs_2_workers": same,
              "largest_main_score_difference": worst,
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "load_average_after": os.getloadavg()}}
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
