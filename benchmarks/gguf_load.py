"""Loading a GGUF file: dequantising it (transformers) against reading the cached fp32 weights.

Each measure (load, then encode two texts) runs in a fresh process with an empty ``EMBENCH_GGUF_CACHE`` for the cold load (which
writes the cache) and the same cache for the warm load, and reports wall seconds and the peak
resident memory of that process. The ratio is cold / warm, measured in one run.

    python benchmarks/gguf_load.py --model PATH/TO/file.gguf --out gguf_load.json
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import resource, sys, time
import embench
t = time.perf_counter()
enc = embench.load_model(sys.argv[1], device="cpu")
enc.model  # the weights are read on first use
v = enc.encode_batch(["A man plays a guitar.", "Two dogs run through the snow."])
seconds = time.perf_counter() - t
print(repr(v.tolist()))
print(seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def measure(model: str, cache: Path) -> dict:
    env = {**os.environ, "EMBENCH_GGUF_CACHE": str(cache)}
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, model], env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"the load failed:\n{out.stderr[-3000:]}")
    lines = out.stdout.strip().splitlines()
    seconds, peak = (float(x) for x in lines[-1].split())
    return {"load_and_encode_s": seconds, "process_s": time.perf_counter() - start, "peak_rss_mib": peak,
            "vectors": ast.literal_eval(lines[-2])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a .gguf file")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        cold = measure(args.model, Path(cache))
        warm = measure(args.model, Path(cache))
    # the cached weights must give the vectors the dequantised ones give
    diff = max(abs(a - b) for u, v in zip(cold.pop("vectors"), warm.pop("vectors"), strict=True) for a, b in zip(u, v, strict=True))
    result = {"model": Path(args.model).name, "cold_dequantise": cold, "warm_cached": warm,
              "ratio_cold_over_warm": cold["load_and_encode_s"] / warm["load_and_encode_s"],
              "max_abs_vector_difference": diff, "load_average": os.getloadavg()}
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
