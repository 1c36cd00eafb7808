"""What one forward pass buys: `analyze layers` and the default audit against one encoding, and the
engine's FLOP rate against the machine's matrix-multiply rate.

    nice -n 10 python benchmarks/one_pass.py [--model all-MiniLM-L6-v2] [--out FILE.json] [--skip-audit]

Each measure runs in a fresh subprocess with an empty embedding cache (cold), so its wall time and
peak resident memory (``ru_maxrss``) are its own; the ratios are taken within this one run:

  1. ``encode-layers-texts``: one encoding (the model's own pooling) of the texts `analyze layers` reads
     (STS-B test + a 5,000-example banking77 subset); then ``analyze-layers``: every layer (0..L), STS-B
     and kNN, from the shared pass; and ``layers-one-pass-per-layer``: the same vectors one layer at a
     time (what the engine did before it served several views from one pass);
  2. ``sts-all``: one cold `embench run --suite sts-all`; ``audit``: the default `embench audit`, cold;
  3. ``flops``: the engine's linear-layer FLOP rate on the unique sts-all texts against a plain
     ``torch.mm`` of the same shapes, both fp32 on the same threads, interleaved in five rounds (the
     median round's ratio: a shared host's drift moves both sides of a round alike). Each round also
     times the forward's linear layers alone (``F.linear`` with bias, on the engine's own batch shapes,
     padding included): the most any forward pass that does the same matrix work could reach.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

JOBS = ("encode-layers-texts", "analyze-layers", "layers-one-pass-per-layer", "sts-all", "audit", "flops")


def _layers_texts(root):
    from embench.analysis.inputs import stsb, unique
    from embench.analysis.knn import load_labelled

    pairs = stsb(root)
    labelled = load_labelled("banking77", root, limit=5000, seed=42)
    return unique(pairs.left + pairs.right + labelled.texts)


def job(name: str, model: str, tmp: Path) -> dict:
    """Run one measure in this process; returns its figures."""
    import embench
    from embench.data.root import DataRoot
    from embench.encoding.engine import Engine

    root = DataRoot.resolve(None)
    cache = tmp / f"cache-{name}"
    start = time.perf_counter()
    out: dict = {}
    if name == "encode-layers-texts":
        texts = _layers_texts(root)
        Engine(embench.load_model(model, pooling="mean"), batch_size=64, cache_dir=cache).embed(texts)
        out["texts"] = len(texts)
    elif name == "analyze-layers":
        from embench.analysis import run

        run("layers", [model], tmp / "layers", cache_dir=cache, dataset="banking77")
    elif name == "layers-one-pass-per-layer":
        texts = _layers_texts(root)
        base = embench.load_model(model, pooling="mean")
        for layer in range(base.num_layers + 1):
            Engine(embench.load_model(model, pooling="mean", layer=layer), batch_size=64, cache_dir=cache).embed(texts)
    elif name == "sts-all":
        embench.evaluate(model, "sts-all", results_dir=tmp / "r-sts", cache_dir=cache)
    elif name == "audit":
        from embench.audit.protocol import audit

        result = audit(model, results_dir=tmp / "r-audit", cache_dir=cache)
        out["passes"] = result.passes.rows
    elif name == "flops":
        out.update(flop_rate(model, root))
    out["seconds"] = time.perf_counter() - start
    return out


def _linear_layers_alone(lengths, cfg, batch: int) -> float:
    """Seconds for only the linear layers of a forward over texts of these token lengths, batched as the
    engine batches them (sorted, ``batch`` texts padded to their longest): Q, K, V and the attention
    output on (tokens x hidden), then the two FFN matrices, per layer, bias included."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    h, inter = cfg.hidden_size, cfg.intermediate_size
    square = [(torch.randn(h, h), torch.randn(h)) for _ in range(4)]
    up, down = (torch.randn(inter, h), torch.randn(inter)), (torch.randn(h, inter), torch.randn(h))
    ordered = np.sort(lengths)[::-1]
    seconds = 0.0
    with torch.inference_mode():
        for b in range(0, len(ordered), batch):
            rows = int(ordered[b]) * len(ordered[b : b + batch])
            x, wide = torch.randn(rows, h), torch.randn(rows, inter)
            t = time.perf_counter()
            for _ in range(cfg.num_hidden_layers):
                for w, bias in square:
                    F.linear(x, w, bias)
                F.linear(x, *up)
                F.linear(wide, *down)
            seconds += time.perf_counter() - t
    return seconds


def flop_rate(model: str, root, rounds: int = 5) -> dict:
    """Linear-layer FLOPs of encoding the unique sts-all texts over the time it took, against ``torch.mm`` on
    (tokens x hidden) @ (hidden x hidden) and (tokens x hidden) @ (hidden x intermediate).

    The two are interleaved: the texts are split into ``rounds`` random parts, and each part's encoding
    is followed by 4 s of ``torch.mm``, so a drift in the machine's speed (a shared host) moves both
    sides of each round's ratio alike. The ratio reported is the median over the rounds; the overall
    rates are beside it."""
    import numpy as np
    import torch

    import embench
    from embench.encoding.engine import Engine
    from embench.evaluation.suites import SUITES
    from embench.tasks import TASKS

    texts = sorted({t for n in SUITES.get("sts-all").tasks for t in TASKS.get(n).prepare(root, embench.EvalProtocol()).texts})
    enc = embench.load_model(model)
    cfg = enc.config
    lengths = enc.token_lengths(texts)
    h, inter, layers = cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers
    per_token = 2 * layers * (4 * h * h + 2 * h * inter)  # Q, K, V, output projections + the two FFN matrices
    Engine(enc, batch_size=128).embed(texts[:256])  # load the weights and warm up outside the clock
    a, wq, wf = torch.randn(128 * 20, h), torch.randn(h, h), torch.randn(h, inter)
    for _ in range(3):
        torch.mm(a, wq), torch.mm(a, wf)
    parts = np.array_split(np.random.default_rng(0).permutation(np.arange(256, len(texts))), rounds)
    enc_flop = enc_s = mm_flop = mm_s = lin_s = 0.0
    ratios, linear_ratios = [], []
    for part in parts:
        engine = Engine(enc, batch_size=128)  # a fresh memory: every text of the part is encoded
        t = time.perf_counter()
        engine.embed([texts[i] for i in part])
        seconds = time.perf_counter() - t
        flop = per_token * float(lengths[part].sum())
        t, reps = time.perf_counter(), 0
        while time.perf_counter() - t < 4:
            for _ in range(4):
                torch.mm(a, wq)
            for _ in range(2):
                torch.mm(a, wf)
            reps += 1
        mm_seconds = time.perf_counter() - t
        mflop = reps * 2 * a.shape[0] * (4 * h * h + 2 * h * inter)
        ratios.append((flop / seconds) / (mflop / mm_seconds))
        linear_seconds = _linear_layers_alone(lengths[part], cfg, batch=128)
        linear_ratios.append((flop / linear_seconds) / (mflop / mm_seconds))
        enc_flop, enc_s, mm_flop, mm_s = enc_flop + flop, enc_s + seconds, mm_flop + mflop, mm_s + mm_seconds
        lin_s += linear_seconds
    tflop = per_token * float(lengths.sum())
    return {"tokens": int(lengths.sum()), "tflop": tflop / 1e12, "encode_gflops": enc_flop / enc_s / 1e9,
            "matmul_gflops": mm_flop / mm_s / 1e9, "flop_rate_ratio": float(np.median(ratios)),
            "flop_rate_ratio_rounds": ratios, "encode_seconds": enc_s,
            "linear_layers_alone_gflops": enc_flop / lin_s / 1e9, "linear_layers_alone_ratio": float(np.median(linear_ratios)),
            "linear_layers_alone_seconds": lin_s,
            "floor_seconds": tflop / (mm_flop / mm_s), "threads": torch.get_num_threads()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--out", default=None)
    ap.add_argument("--skip-audit", action="store_true")
    ap.add_argument("--only", nargs="*", choices=JOBS, help="run only these measures")
    ap.add_argument("--job", choices=JOBS, help=argparse.SUPPRESS)
    ap.add_argument("--tmp", help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.job:  # a child: one measure, its figures and peak memory as JSON on stdout
        figures = job(args.job, args.model, Path(args.tmp))
        figures["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(figures))
        return
    tmp = Path(tempfile.mkdtemp(prefix="embench-one-pass-"))
    results = {}
    for name in JOBS:
        if (name == "audit" and args.skip_audit) or (args.only and name not in args.only):
            continue
        proc = subprocess.run([sys.executable, __file__, "--job", name, "--model", args.model, "--tmp", str(tmp)],
                              capture_output=True, text=True, check=True)
        results[name] = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"{name:>27}: {results[name]['seconds']:7.1f} s, peak {results[name]['peak_rss_mib']:6.0f} MiB", flush=True)
    ratios = {}
    if {"encode-layers-texts", "analyze-layers", "layers-one-pass-per-layer"} <= set(results):
        enc = results["encode-layers-texts"]["seconds"]
        ratios["analyze_layers_over_one_encoding"] = results["analyze-layers"]["seconds"] / enc
        ratios["one_pass_per_layer_over_one_encoding"] = results["layers-one-pass-per-layer"]["seconds"] / enc
    if {"audit", "sts-all"} <= set(results):
        ratios["audit_over_sts_all"] = results["audit"]["seconds"] / results["sts-all"]["seconds"]
    if "flops" in results:
        f = results["flops"]
        ratios["flop_rate_ratio"] = f["flop_rate_ratio"]
        print(f"fp32 matmul rate {f['matmul_gflops']:.0f} GFLOP/s; encoding {f['encode_gflops']:.0f} GFLOP/s "
              f"({f['tflop']:.2f} TFLOP of linear layers, floor {f['floor_seconds']:.0f} s); the same linear "
              f"layers alone {f['linear_layers_alone_gflops']:.0f} GFLOP/s ({f['linear_layers_alone_ratio']:.2f} of matmul)")
    for k, v in ratios.items():
        print(f"{k:>37}: {v:.2f}")
    if args.out:
        Path(args.out).write_text(json.dumps({"model": args.model, "jobs": results, "ratios": ratios}, indent=2) + "\n")


if __name__ == "__main__":
    main()
