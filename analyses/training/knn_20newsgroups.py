"""kNN accuracy (k = 10) of models on the 20 Newsgroups test texts (cropping paper, Table 2 protocol).

Usage: python analyses/training/knn_20newsgroups.py --out reports/training/knn.json MODEL[=POOLING] ...

Each model embeds the test texts without L2 normalisation (embench's engine, ``--max-length`` tokens); ``knn_accuracy``
scores a k = 10 Euclidean classifier on a seeded, stratified 9:1 split of them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import time
from pathlib import Path

import numpy as np

from embench.analysis.knn import knn_accuracy
from embench.encoding.engine import Engine
from embench.models import load_model


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+", help="model or folder, optionally =POOLING")
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--limit", type=int, default=None, help="a seeded random sample of n test texts (the file is sorted by label)")
    args = ap.parse_args()
    root = Path(os.environ["EMBENCH_DATA"])
    rows = [json.loads(line) for line in gzip.open(root / "tasks/twentynewsgroups/test.jsonl.gz", "rt")]
    rows = [r for r in rows if r["text"].strip()]
    if args.limit and args.limit < len(rows):
        keep = np.sort(np.random.default_rng(0).choice(len(rows), args.limit, replace=False))
        rows = [rows[i] for i in keep]
    texts, labels = [r["text"] for r in rows], np.array([r["label"] for r in rows])
    results = {}
    for spec in args.models:
        name, _, pooling = spec.partition("=")
        enc = load_model(name, pooling=pooling or None, max_length=args.max_length, normalize=False)  # paper: raw vectors
        t = time.perf_counter()
        X = Engine(enc, batch_size=64, cache_dir=None).embed(texts)
        r = knn_accuracy(X, labels, k=10)
        r.update(model=name, pooling=enc.pooling, max_length=args.max_length, n_texts=len(texts),
                 encode_seconds=round(time.perf_counter() - t, 1))
        results[spec] = r
        print(f"{spec}: kNN accuracy {100 * r['accuracy']:.2f} +- {100 * r['stderr']:.2f} (n_test {r['n_test']})", flush=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
