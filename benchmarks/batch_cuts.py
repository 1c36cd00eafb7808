"""The engine's token-budget batches cut where they pad least (``embench/core/length_cuts.py``) against batches
filled in turn (the cut before 2026-11-28, and the plain reference loop's): the padded tokens of sts-all's texts at
each budget, in one length order (a CPU's, and the plain loop's) and in the chunks a GPU tokenises them in; and timed
passes of the engine under both cuts on ``--device``, alternated ``--repeats`` times in one process.

    EMBENCH_DATA=... python benchmarks/batch_cuts.py --model all-MiniLM-L6-v2 --repeats 3 \
        --out reports/benchmarks/batch_cuts

A padded forward computes its batch's texts x longest tokens, so on a device that computes every padded token at the
same rate the pass's time follows the padded tokens; the rate of issue 30 counts real tokens.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # encode_gpu.py beside this file; embench from this checkout


@contextlib.contextmanager
def filled_in_turn():
    """The engine's batches filled in turn, as before (``cut_batches(..., least_padding=False)``)."""
    import embench.encoding.batching as batching

    cut = batching.cut_batches
    batching.cut_batches = lambda lengths, size, tokens, least_padding=True: cut(lengths, size, tokens, False)
    try:
        yield
    finally:
        batching.cut_batches = cut


def padded_tokens(lengths: np.ndarray, texts: list[str], budget: int) -> dict:
    """Padded tokens of each cut at ``budget``: over one order, and over a GPU's tokenisation chunks."""
    from embench.encoding import batching

    by_chars = np.argsort(-np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), kind="stable")
    orders = {"one order": [np.arange(len(texts))],
              "GPU chunks": batching.split_chunks(by_chars, batching.GPU_FIRST_CHUNK, batching.GPU_TOKENIZE_CHUNK)}
    out = {}
    for where, chunks in orders.items():
        for least in (False, True):
            total = batches = 0
            for chunk in chunks:
                desc = np.sort(lengths[chunk])[::-1]
                for lo, hi in batching.cut_batches(desc, None, budget, least_padding=least):
                    total, batches = total + (hi - lo) * int(desc[lo]), batches + 1
            out[f"{where}, {'least padding' if least else 'filled in turn'}"] = {"padded": total, "batches": batches}
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--budgets", default="16384,32768,65536")
    ap.add_argument("--timed-budget", type=int, default=65536)
    ap.add_argument("--cap", type=int, default=0, help="texts a timed batch holds at most (0: none, as on a GPU; "
                    "a CPU's default is 128, under which the budget seldom binds)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True, help="OUT.json and OUT.md are written")
    args = ap.parse_args(argv)

    from encode_gpu import sts_all_texts

    import embench
    from embench.encoding.engine import Engine

    texts = sts_all_texts()
    enc = embench.load_model(args.model, device=args.device)
    lengths = np.array([len(x) for x in enc.pretokenize(texts)["input_ids"]])
    cuts = {b: padded_tokens(lengths, texts, b) for b in map(int, args.budgets.split(","))}
    timed: dict[str, list[float]] = {"filled in turn": [], "least padding": []}
    engines = {}
    for _ in range(args.repeats):
        for name in timed:
            with filled_in_turn() if name == "filled in turn" else contextlib.nullcontext():
                engines[name] = Engine(enc, batch_tokens=args.timed_budget, batch_size=args.cap or 10**9,
                                       cache_dir=None)
                start = time.perf_counter()
                engines[name].embed(texts)
                timed[name].append(time.perf_counter() - start)
            print(name, f"{timed[name][-1]:.2f} s", flush=True)
    result = {"device": torch.cuda.get_device_name() if args.device.startswith("cuda") else
              f"CPU ({platform.processor() or platform.machine()})", "model": args.model, "texts": len(texts),
              "real_tokens": int(lengths.sum()), "torch": torch.__version__, "threads": torch.get_num_threads(),
              "cuts": cuts, "timed_budget": args.timed_budget, "cap": args.cap, "seconds": timed,
              "engine_padded": {k: e.stats["padded_tokens"] for k, e in engines.items()}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))
    return result


def markdown(r: dict) -> str:
    real = r["real_tokens"]
    lines = [f"# Token-budget batches: least padding against filled in turn ({r['device']})", "",
             f"`benchmarks/batch_cuts.py`, sts-all's {r['texts']:,} texts, `{r['model']}`'s tokenizer: {real:,} real "
             "tokens. Padded tokens (and batches) of each cut; a GPU tokenises in chunks of 4,096 texts ordered by "
             "characters, a CPU (and the plain reference loop of `encode_gpu.py`) in one order.", "",
             "| budget | " + " | ".join(next(iter(r["cuts"].values()))) + " |", "|---:|" + "---:|" * 4]
    for budget, cut in r["cuts"].items():
        lines.append(f"| {int(budget):,} | " + " | ".join(f"{c['padded']:,} ({c['padded'] / real:.3f}x, "
                                                           f"{c['batches']})" for c in cut.values()) + " |")
    med = {k: statistics.median(v) for k, v in r["seconds"].items()}
    cap = f"at most {r['cap']} texts a batch" if r.get("cap") else "no cap on texts, as on a GPU"
    lines += ["", f"Timed passes of the engine on this device at a budget of {r['timed_budget']:,}, {cap} (torch {r['torch']}, "
              f"{r['threads']} threads), the two cuts alternated in one process; medians of "
              f"{len(r['seconds']['least padding'])}:", "",
              "| cut | seconds a pass | padded tokens | every pass |", "|---|---:|---:|---|"]
    lines += [f"| {k} | {med[k]:.2f} | {r['engine_padded'][k]:,} | {', '.join(f'{s:.2f}' for s in v)} |"
              for k, v in r["seconds"].items()]
    lines += ["", f"Least padding is {med['filled in turn'] / med['least padding']:.2f}x as fast here."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
