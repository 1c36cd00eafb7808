"""Speed of the SentEval transfer table: encoding vs fitting, and batched vs one-at-a-time fits.

    nice -n 10 python benchmarks/transfer.py --model all-MiniLM-L6-v2 --classifier default \
        --out reports/benchmarks/transfer.json [--tasks TREC MRPC] [--sequential TREC]

For every task: the seconds spent encoding its texts (the engine, without the embedding cache unless
``--cache-dir`` is given) and fitting (SentEval's validation scheme, all fits batched), plus the
test accuracy. ``--sequential TASK`` fits that task again one (fold, penalty) model at a time, as
SentEval does, and reports the speed-up of the batched fits and that both give the same accuracy.
SentEval itself is not installable on current Python, so "one at a time" is embench's own trainer
run with batches of one fit: the same arithmetic, SentEval's schedule.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch

from embench.data.root import DataRoot
from embench.encoding.engine import Engine
from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.suites import SUITES
from embench.models.loader import load_model
from embench.tasks import TASKS
from embench.tasks.senteval.classifier import default_device, get_config
from embench.tasks.senteval.transfer import score_transfer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--classifier", default="default", choices=["default", "prototyping"])
    ap.add_argument("--pair-features", default="uv", choices=["uv", "senteval-code"], help="MRPC/SICK-E classifier input")
    ap.add_argument("--tasks", nargs="*", default=list(SUITES.get("transfer").tasks))
    ap.add_argument("--sequential", nargs="*", default=[], help="tasks to fit again one model at a time")
    ap.add_argument("--data", default=None)
    ap.add_argument("--cache-dir", default=None, help="embedding cache (default: none, so encoding is timed)")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    root = DataRoot.resolve(args.data)
    protocol = EvalProtocol(classifier=args.classifier)
    config = get_config(args.classifier)
    encoder = load_model(args.model)
    engine = Engine(encoder, batch_size=args.batch_size, cache_dir=args.cache_dir)
    rows = []
    for name in args.tasks:
        task = TASKS.get(name)
        data, _ = task.read(root)
        texts = list(dict.fromkeys(t for s in data.values() for t in s.texts()))
        t0 = time.perf_counter()
        engine.embed(texts)
        encode_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        score = score_transfer(task, data, engine.embed, config, protocol.seed, features=args.pair_features)
        fit_s = time.perf_counter() - t0
        row = {"task": task.display, "texts": len(texts), "encode_s": round(encode_s, 1), "fit_s": round(fit_s, 1),
               "test_acc": round(100 * score.main, 2), "dev_acc": round(100 * score.scores["dev_acc"], 2)}
        if name in args.sequential:
            t0 = time.perf_counter()
            seq = score_transfer(task, data, engine.embed, config, protocol.seed, batched=False, features=args.pair_features)
            row["fit_one_at_a_time_s"] = round(time.perf_counter() - t0, 1)
            row["speedup"] = round(row["fit_one_at_a_time_s"] / max(fit_s, 1e-9), 2)
            row["same_accuracy"] = seq.main == score.main
        rows.append(row)
        print(json.dumps(row), flush=True)
    total = {k: round(sum(r[k] for r in rows), 1) for k in ("encode_s", "fit_s")}
    report = {
        "model": args.model, "classifier": args.classifier, "pair_features": args.pair_features, "rows": rows, "total": total,
        "avg_test_acc": round(sum(r["test_acc"] for r in rows) / len(rows), 2),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "torch": torch.__version__,
                    "fit_device": str(default_device()), "load_avg_at_end": os.getloadavg()},
    }
    print(json.dumps({"total": total, "avg_test_acc": report["avg_test_acc"]}))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
