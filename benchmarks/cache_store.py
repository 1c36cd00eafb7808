"""The embedding cache's storage: embench's shard files against SQLite (standard library), side by side.

    nice -n 10 python benchmarks/cache_store.py --rows 60000 --dim 384 --out reports/benchmarks/cache_store.json

Each store writes ``--rows`` float32 vectors in chunks of the engine's flush size (one writer), then
a fresh process reads every vector back (what a warm run does: open, index, look up every key), then
``--writers`` processes write overlapping and distinct keys at once and every stored vector is
checked against its key. Each phase runs in its own process so that its peak resident memory
(``ru_maxrss``, reported as the rise over the process's own before the phase) is its own. SQLite is set up as its documentation advises for concurrent writers:
WAL journal, ``synchronous=NORMAL``, a busy timeout, one transaction per chunk, a ``WITHOUT ROWID``
table keyed by the text hash.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import platform
import resource
import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np

from embench.encoding.cache import EmbeddingCache, text_key
from embench.encoding.engine import FLUSH_EVERY


class SqliteCache:
    """The same interface as ``EmbeddingCache``, over one SQLite database per encoder configuration."""

    def __init__(self, root: Path, namespace: str):
        folder = Path(root) / namespace
        folder.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(folder / "vectors.sqlite", timeout=60, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS v (key TEXT PRIMARY KEY, vec BLOB NOT NULL) WITHOUT ROWID")

    def put_many(self, keys: list[str], vectors: np.ndarray) -> None:
        rows = [(k, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for k, v in zip(keys, vectors, strict=True)]
        self.db.execute("BEGIN IMMEDIATE")
        self.db.executemany("INSERT OR IGNORE INTO v VALUES (?, ?)", rows)
        self.db.execute("COMMIT")

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for i in range(0, len(keys), 900):  # SQLite's default limit on bound parameters is 999
            chunk = keys[i : i + 900]
            marks = ",".join("?" * len(chunk))
            for k, blob in self.db.execute(f"SELECT key, vec FROM v WHERE key IN ({marks})", chunk):
                out[k] = np.frombuffer(blob, dtype=np.float32)
        return out


STORES = {"shards": EmbeddingCache, "sqlite": SqliteCache}


def vector(key: str, dim: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)


def keys_of(prefix: str, n: int) -> list[str]:
    return [text_key(f"{prefix} {i}") for i in range(n)]


def write(store: str, root: str, rows: int, dim: int, q) -> None:
    keys = keys_of("text", rows)
    vecs = np.random.default_rng(0).standard_normal((rows, dim), dtype=np.float32)
    base = rss_mb()  # the vectors to write are already in memory (the engine holds them too)
    start = time.perf_counter()
    cache = STORES[store](Path(root), "ns")
    for i in range(0, rows, FLUSH_EVERY):
        cache.put_many(keys[i : i + FLUSH_EVERY], vecs[i : i + FLUSH_EVERY])
    q.put({"seconds": time.perf_counter() - start, "peak_rss_mb": rss_mb() - base})


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def read(store: str, root: str, rows: int, dim: int, q) -> None:
    keys = keys_of("text", rows)
    base = rss_mb()  # the interpreter, numpy and the keys: what any reader has before it reads
    start = time.perf_counter()
    got = STORES[store](Path(root), "ns").get_many(keys)
    seconds = time.perf_counter() - start
    peak = rss_mb() - base
    vecs = np.random.default_rng(0).standard_normal((rows, dim), dtype=np.float32)
    wrong = sum(not np.array_equal(got[k], vecs[i]) for i, k in enumerate(keys) if k in got)
    q.put({"seconds": seconds, "peak_rss_mb": peak, "found": len(got), "wrong": wrong})


def hammer(store: str, root: str, worker: int, rounds: int, dim: int, q, go) -> None:
    batches = []
    for r in range(rounds):
        keys = keys_of("shared", 200)[r * 50 : r * 50 + 200] + keys_of(f"w{worker} r{r}", 300)
        batches.append((keys, np.stack([vector(k, dim) for k in keys])))
    q.put("ready")
    go.wait()  # every writer starts at once
    start = time.perf_counter()
    cache = STORES[store](Path(root), "ns")
    for keys, vecs in batches:
        cache.put_many(keys, vecs)
    q.put(time.perf_counter() - start)


def concurrent(store: str, root: str, writers: int, rounds: int, dim: int, ctx) -> dict:
    queues, go = [ctx.Queue() for _ in range(writers)], ctx.Event()
    procs = [ctx.Process(target=hammer, args=(store, root, w, rounds, dim, q, go)) for w, q in enumerate(queues)]
    for p in procs:
        p.start()
    for q in queues:
        assert q.get() == "ready"
    go.set()
    seconds = max(q.get() for q in queues)  # the slowest writer's time, imports left out
    for p in procs:
        p.join()
    expected = set(keys_of("shared", 200)) | {k for w in range(writers) for r in range(rounds) for k in keys_of(f"w{w} r{r}", 300)}
    got = STORES[store](Path(root), "ns").get_many(sorted(expected))
    wrong = sum(not np.array_equal(v, vector(k, dim)) for k, v in got.items())
    return {"seconds": seconds, "failed_writers": sum(p.exitcode != 0 for p in procs), "expected": len(expected),
            "unreadable": len(expected) - len(got), "wrong": wrong}


def in_process(ctx, target, *args) -> dict:
    q = ctx.Queue()
    p = ctx.Process(target=target, args=(*args, q))
    p.start()
    out = q.get()
    p.join()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=60_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3, help="best of n for the write and read times")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    report = {"rows": args.rows, "dim": args.dim, "chunk": FLUSH_EVERY, "python": platform.python_version(),
              "sqlite": sqlite3.sqlite_version, "machine": f"{platform.machine()}, {mp.cpu_count()} cores", "stores": {}}
    for store in STORES:
        runs = []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as root:
                w = in_process(ctx, write, store, root, args.rows, args.dim)
                r = in_process(ctx, read, store, root, args.rows, args.dim)
                size = sum(p.stat().st_size for p in Path(root).rglob("*") if p.is_file())
            runs.append((w, r, size))
        with tempfile.TemporaryDirectory() as root:
            conc = concurrent(store, root, args.writers, args.rounds, args.dim, ctx)
        report["stores"][store] = {
            "write_seconds": round(min(w["seconds"] for w, _, _ in runs), 3),
            "write_peak_rss_mb_over_base": round(max(w["peak_rss_mb"] for w, _, _ in runs), 1),
            "read_seconds": round(min(r["seconds"] for _, r, _ in runs), 3),
            "read_peak_rss_mb_over_base": round(max(r["peak_rss_mb"] for _, r, _ in runs), 1),
            "read_found": runs[0][1]["found"], "read_wrong": runs[0][1]["wrong"],
            "disk_mb": round(runs[0][2] / 2**20, 1),
            "concurrent": {k: round(v, 3) if isinstance(v, float) else v for k, v in conc.items()},
        }
        print(store, json.dumps(report["stores"][store]))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
