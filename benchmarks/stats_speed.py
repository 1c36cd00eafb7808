"""What intervals cost: ``--ci`` on sts-all from stored items against a warm run, and the bootstrap against scipy.

    python benchmarks/stats_speed.py [--model all-MiniLM-L6-v2] [--resamples 1000] [--out FILE.json]

Runs, back to back on the same machine:
  1. a warm run: the embedding cache filled, every record scored again (``overwrite``), both as the
     ``embench run`` command in a fresh process (what benchmarks/sts_all.py calls a warm run) and in-process;
  2. the same run from stored records without and with ``ci=95``: the difference is what ``--ci`` costs
     (target: under 10 % of the warm run);
  3. one task of 10,000 pairs (Spearman, ``resamples`` resamples): embench's count-based bootstrap
     against ``scipy.stats.bootstrap`` given a vectorised Spearman (rankdata along the last axis), same
     draws (same generator and batch), with the largest difference between the two distributions.
Peak memory (tracemalloc, numpy's allocations included) is printed beside each time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from scipy import stats as sps

import embench
from embench.stats import Metric, Scored, bootstrap_distributions


def timed(fn):
    tracemalloc.start()
    start = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return out, seconds, peak


def spearman_vectorised(x, y, axis=-1):
    rx, ry = sps.rankdata(x, axis=axis), sps.rankdata(y, axis=axis)
    rx = rx - rx.mean(axis=axis, keepdims=True)
    ry = ry - ry.mean(axis=axis, keepdims=True)
    return (rx * ry).sum(axis=axis) / np.sqrt((rx * rx).sum(axis=axis) * (ry * ry).sum(axis=axis))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    report: dict = {"model": args.model, "resamples": args.resamples}
    with tempfile.TemporaryDirectory() as tmp:
        common = {"results_dir": Path(tmp) / "results", "cache_dir": Path(tmp) / "cache"}
        embench.evaluate(args.model, "sts-all", **common)  # fills the cache and the store
        _, warm, warm_mem = timed(lambda: embench.evaluate(args.model, "sts-all", overwrite=True, **common))
        cli = [sys.executable, "-m", "embench.cli", "run", "--model", args.model, "--overwrite", "-q",
               "--results-dir", str(common["results_dir"]), "--cache-dir", str(common["cache_dir"])]
        start = time.perf_counter()
        subprocess.run(cli, check=True, capture_output=True, env=os.environ)
        warm_cli = time.perf_counter() - start
        _, stored, _ = timed(lambda: embench.evaluate(args.model, "sts-all", **common))
        ev, with_ci, ci_mem = timed(lambda: embench.evaluate(args.model, "sts-all", ci=95, resamples=args.resamples, **common))
    cost = with_ci - stored
    report.update(warm_run_s=round(warm, 3), warm_peak_mib=round(warm_mem, 1), stored_run_s=round(stored, 3),
                  stored_with_ci_s=round(with_ci, 3), ci_peak_mib=round(ci_mem, 1), ci_cost_s=round(cost, 3),
                  ci_cost_vs_warm=round(cost / warm, 3), warm_cli_run_s=round(warm_cli, 3),
                  ci_cost_vs_warm_cli=round(cost / warm_cli, 3),
                  avg_interval=[round(100 * v, 2) for v in ev.intervals[(ev.records[0].model, "Avg.")]])
    print(f"warm sts-all run, CLI:       {warm_cli:7.2f} s   (a fresh `embench run` process)")
    print(f"warm sts-all run, in-process:{warm:7.2f} s   peak {warm_mem:7.1f} MiB")
    print(f"from stored records:         {stored:7.2f} s")
    print(f"from stored records, --ci:   {with_ci:7.2f} s   peak {ci_mem:7.1f} MiB")
    print(f"--ci costs {cost:.2f} s = {100 * cost / warm_cli:.1f} % of a warm CLI run, {100 * cost / warm:.1f} % of an "
          "in-process one (target < 10 %)")

    rng = np.random.default_rng(0)
    x = rng.standard_normal(10_000)
    y = np.round(2 * (0.6 * x + 0.8 * rng.standard_normal(10_000))) / 2  # gold with ties, as STS has
    batch = 100
    ours, t_ours, m_ours = timed(lambda: bootstrap_distributions([Scored([x], [y])], Metric(), args.resamples,
                                                                 np.random.default_rng(1), batch=batch)[0])
    ref, t_ref, m_ref = timed(lambda: sps.bootstrap((x, y), spearman_vectorised, paired=True, vectorized=True,
                                                    n_resamples=args.resamples, batch=batch, method="percentile",
                                                    rng=np.random.default_rng(1)).bootstrap_distribution)
    diff = float(np.max(np.abs(ours - ref)))
    report.update(bootstrap_10k_s=round(t_ours, 3), bootstrap_10k_peak_mib=round(m_ours, 1), scipy_10k_s=round(t_ref, 3),
                  scipy_10k_peak_mib=round(m_ref, 1), speedup_vs_scipy=round(t_ref / t_ours, 2), max_abs_difference=diff)
    print(f"10k pairs, {args.resamples} resamples, Spearman: embench {t_ours:.2f} s (peak {m_ours:.0f} MiB), "
          f"scipy.stats.bootstrap {t_ref:.2f} s (peak {m_ref:.0f} MiB): {t_ref / t_ours:.1f}x; max |difference| {diff:.1e}")
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
