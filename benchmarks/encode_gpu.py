"""Encoding on a GPU: embench's engine against sentence-transformers ``encode`` and a plain reference loop,
each as a fraction of the GPU's bf16 matrix-multiply rate measured in the same run.

    python benchmarks/encode_gpu.py --minilm DIR [--models bert-base,bert-large,qwen2-1.5b,all-MiniLM-L6-v2]
                                    [--out reports/benchmarks/encode_gpu] [--profile bert-base]

The texts are the unique texts of sts-all (``EMBENCH_DATA``). The models: BERT-base and BERT-large
(mean pooling) and a Qwen2-1.5B-shaped decoder (last token, left padding) built from their configs with
random weights (throughput does not depend on the values; BERT's uncased tokenizer, taken from
all-MiniLM-L6-v2, serves all three), and the real all-MiniLM-L6-v2 (``--minilm``: its folder). Every
method runs in bf16 with weights held in bf16, from raw texts to float32 vectors on the host, after one
warm-up pass over 12,288 of the texts (three of the engine's tokenisation chunks):

  * embench: ``Engine(load_model(..., dtype="bf16")).embed(texts)``, no cache, at its default token
    budget and at each of ``--budgets``;
  * sentence-transformers ``encode`` at batch 64 (the issue's "same batch") and at each of ``--st-batches``
    (its best is "best batch");
  * the plain loop below (``plain_loop``): texts sorted by token length, token-budget batches, bf16
    weights, ``inference_mode``, SDPA, pinned non-blocking copies, pooled vectors kept on the device.

A method's rate is 2 x non-embedding parameters x real tokens (the model's own tokenisation) per second; the
embench and plain rows carry ``padded_tokens``, what their batches pad those tokens to (embench cuts its batches
where they pad least, the plain loop fills each in turn);
``frac_of_matmul`` divides it by the bf16 8192^3 ``torch.mm`` rate. Cosines compare each method's vectors
with sentence-transformers' at batch 64, text by text. ``--profile NAME`` adds a torch profiler table of
one embench pass over that model (and of one pass with CUDA graphs, where they run). ``--check-fp32`` compares
all-MiniLM-L6-v2's fp32 vectors on the GPU with the CPU's, and bf16 with fp32. Writes ``OUT.json`` (with a
``summary`` per model shape) and ``OUT.md``.

``--cuda-graphs NAMES`` (default bert-base and all-MiniLM-L6-v2, the host-bound ones) adds embench with
``load_model(..., cuda_graphs=True)`` (``embench/encoding/cuda_graphs.py``): a first pass on a fresh encoder
(every graph captured in it), the same warm-up and timed pass as the eager rows (``embench+cuda-graphs@BUDGET``,
the figure compared with ``embench@BUDGET``), and one more pass, every shape's graph captured by then
(``(steady)``), each with the graphs' counts (captured, replayed, eager batches, capture seconds).

``--chunks FIRST/SIZE[@BUDGET],...`` adds embench at the default budget (or BUDGET) with other tokenisation chunks (a
first chunk of FIRST texts, tokenised before any forward pass, then chunks of SIZE: ``embench/encoding/batching.py``;
a batch never spans two chunks, so larger budgets need larger chunks), rows ``embench@BUDGET-chunksFIRST/SIZE``;
``summary.best_chunks`` names the fastest against the engine's own sizes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import gpu_rates  # beside this file
import numpy as np
import torch
from gpu_rates import non_embedding_params

DEVICE = "cuda"
TINY = False
SHAPES = {  # config kwargs of the random-weight shapes (the published models' sizes)
    "bert-base": ("bert", dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)),
    "bert-large": ("bert", dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)),
    "qwen2-1.5b": ("qwen2", dict(hidden_size=1536, num_hidden_layers=28, num_attention_heads=12, num_key_value_heads=2,
                                 intermediate_size=8960, max_position_embeddings=32768, rope_theta=1e6,
                                 tie_word_embeddings=True)),
}


def sts_all_texts() -> list[str]:
    from embench.data import DataRoot
    from embench.evaluation.protocols import EvalProtocol
    from embench.evaluation.suites import SUITES
    from embench.tasks import TASKS

    root = DataRoot.resolve(None)
    texts: list[str] = []
    for name in SUITES.get("sts-all").tasks:
        texts += TASKS.get(name).prepare(root, EvalProtocol()).texts
    return list(dict.fromkeys(texts))


def build_shape(name: str, minilm: Path, tmp: Path) -> Path:
    """A folder with random weights of the shape ``name`` (bf16 safetensors) and BERT's uncased tokenizer."""
    from transformers import AutoModel, AutoTokenizer, BertConfig, Qwen2Config

    kind, kw = SHAPES[name]
    if TINY:  # a smoke test of the script itself, on any device
        kw = {**kw, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
              **({"num_key_value_heads": 2} if kind == "qwen2" else {})}
    tok = AutoTokenizer.from_pretrained(minilm)
    cfg = (BertConfig if kind == "bert" else Qwen2Config)(vocab_size=len(tok), **kw)
    torch.manual_seed(0)
    with torch.device(DEVICE):
        model = AutoModel.from_config(cfg, dtype=torch.bfloat16)
    folder = tmp / name
    model.save_pretrained(folder)
    if kind == "qwen2":  # a decoder: left padding, and no token type ids
        tok.padding_side = "left"
        tok.model_input_names = ["input_ids", "attention_mask"]
    tok.save_pretrained(folder)
    del model
    empty_cache()
    return folder


def matmul_rate(n: int = 8192, reps: int = 30) -> float:
    return gpu_rates.matmul_rate(DEVICE, n, reps)


def sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def peak_reset() -> None:
    if DEVICE == "cuda":
        torch.cuda.reset_peak_memory_stats()


def peak_bytes() -> int:
    return torch.cuda.max_memory_allocated() if DEVICE == "cuda" else 0


def empty_cache() -> None:
    if DEVICE == "cuda":
        torch.cuda.empty_cache()


@contextlib.contextmanager
def _undone(module_name: str, attr: str, stand_in):
    import importlib

    module = importlib.import_module(module_name)
    real = getattr(module, attr)
    setattr(module, attr, stand_in)
    try:
        yield
    finally:
        setattr(module, attr, real)


# the engine's host-side measures, each undone alone (--ablations): what each is worth on the GPU
ABLATIONS = {
    "without the gc freeze": lambda: _undone("embench.encoding.engine", "older_objects_frozen", contextlib.nullcontext),
    "without the prepared mask": lambda: _undone("embench.models.attention_masks", "waits_for_reads", lambda device: False),
}


def plain_loop(model, tok, texts: list[str], budget: int, pooling: str, max_length: int) -> np.ndarray:
    """The reference: what anyone would write in 40 lines to encode fast on a GPU."""
    ids = tok(texts, truncation=True, max_length=max_length)["input_ids"]
    lengths = np.array([len(x) for x in ids])
    order = np.argsort(-lengths, kind="stable")
    out = None
    with torch.inference_mode():
        i = 0
        while i < len(texts):
            size = max(1, budget // int(lengths[order[i]]))
            idx = order[i : i + size]
            batch = tok.pad({"input_ids": [ids[j] for j in idx]}, return_tensors="pt")
            batch = {k: (v.pin_memory() if DEVICE == "cuda" else v).to(DEVICE, non_blocking=True) for k, v in batch.items()}
            h = model(**batch, use_cache=False).last_hidden_state  # a decoder would otherwise copy every layer's keys into a cache
            mask = batch["attention_mask"]
            if pooling == "mean":
                m = mask.unsqueeze(-1).to(h.dtype)
                pooled = (h * m).sum(1) / m.sum(1)
            else:  # last token, left padding
                pooled = h[:, -1]
            if out is None:
                out = torch.empty(len(texts), pooled.shape[1], device=DEVICE, dtype=torch.float32)
            out[torch.from_numpy(idx).to(DEVICE, non_blocking=True)] = pooled.float()
            i += size
    return out.cpu().numpy()


def plain_padded_tokens(lengths: np.ndarray, budget: int) -> int:
    """The tokens ``plain_loop`` pads to: its one order, longest first, each batch filled in turn to the budget
    (the engine's ``cut_batches(..., least_padding=False)``)."""
    from embench.encoding.batching import cut_batches

    desc = np.sort(lengths)[::-1]
    return sum((hi - lo) * int(desc[lo]) for lo, hi in cut_batches(desc, None, budget, least_padding=False))


@contextlib.contextmanager
def chunk_sizes(first: int, size: int):
    """The engine's GPU tokenisation chunks set to ``first`` texts, then ``size`` each, for the block."""
    from embench.encoding import batching

    was = batching.GPU_FIRST_CHUNK, batching.GPU_TOKENIZE_CHUNK
    batching.GPU_FIRST_CHUNK, batching.GPU_TOKENIZE_CHUNK = first, size
    try:
        yield
    finally:
        batching.GPU_FIRST_CHUNK, batching.GPU_TOKENIZE_CHUNK = was


def timed(fn, warm, repeats: int = 1) -> tuple[np.ndarray, float, int]:
    """(vectors, seconds, peak bytes) of ``fn(texts)`` after ``warm`` ran once; over ``repeats`` passes the median
    seconds (one pass of sts-all is 0.5-1 s, and a single pass's time varied by up to 1.9x on an H200's host)."""
    warm()
    secs = []
    for _ in range(repeats):
        sync()
        peak_reset()
        start = time.perf_counter()
        vecs = fn()
        sync()
        secs.append(time.perf_counter() - start)
    return vecs, statistics.median(secs), peak_bytes()


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(1)


def bench_model(name: str, folder: Path, texts: list[str], args, rate: float) -> dict:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Pooling, Transformer
    from transformers import AutoModel, AutoTokenizer

    import embench
    from embench.encoding.batching import resolve_batching
    from embench.encoding.engine import Engine

    decoder = name.startswith("qwen")
    pooling = "last_token" if decoder else "mean"
    # the warm-up covers three tokenisation chunks, so the threaded path and its pinned buffers are warm too
    # (with 2,048 texts the first timed pass of a process ran 1.5-1.8x slower than the next: encode_gpu.md)
    from embench.encoding.batching import GPU_TOKENIZE_CHUNK

    warm_texts = texts[: 3 * GPU_TOKENIZE_CHUNK]
    enc = embench.load_model(str(folder), device=DEVICE, dtype="bf16", pooling=None if name == "all-MiniLM-L6-v2" else pooling)
    max_length = enc.settings.max_length
    n_params = non_embedding_params(enc.model)
    tok = AutoTokenizer.from_pretrained(folder)
    lengths = np.array([len(x) for x in tok(texts, truncation=True, max_length=max_length)["input_ids"]])
    tokens = int(lengths.sum())
    flop = 2 * n_params * tokens
    runs: dict[str, dict] = {}

    def record(label: str, vecs: np.ndarray, secs: float, peak: int, **extra) -> np.ndarray:
        runs[label] = {"seconds": round(secs, 4), "tokens_per_s": round(tokens / secs), "texts_per_s": round(len(texts) / secs),
                       "frac_of_matmul": round(flop / secs / rate, 4), "peak_gib": round(peak / 2**30, 3), **extra}
        print(f"  {name:18s} {label:24s} {secs:7.3f} s  {runs[label]['frac_of_matmul']:.3f} of matmul  "
              f"{runs[label]['peak_gib']:.2f} GiB", flush=True)
        return vecs

    default_budget = resolve_batching("cuda", None, None)[1]
    embench_vecs, ablated_vecs, summary_ablations = {}, {}, {}
    for budget in dict.fromkeys([default_budget, *args.budgets]):
        last: dict = {}

        def run(ts=texts, b=budget, last=last):
            last["engine"] = Engine(enc, batch_tokens=b, cache_dir=None)
            return last["engine"].embed(ts)

        vecs, secs, peak = timed(run, lambda b=budget: run(warm_texts, b), args.repeats)
        embench_vecs[budget] = record(f"embench@{budget}", vecs, secs, peak, batch_tokens=budget,
                                      padded_tokens=last["engine"].stats["padded_tokens"])

    if name in args.ablations:  # the default engine with one host-side measure undone at a time, in the same process
        for label, undo in ABLATIONS.items():
            def run_ablated(ts=texts, undo=undo):
                with undo():
                    return Engine(enc, cache_dir=None).embed(ts)

            vecs, secs, peak = timed(run_ablated, lambda run_ablated=run_ablated: run_ablated(warm_texts), args.repeats)
            ablated_vecs[f"ablated@{default_budget} {label}"] = record(f"ablated@{default_budget} {label}", vecs, secs, peak)
            summary_ablations[label] = runs[f"ablated@{default_budget} {label}"]["frac_of_matmul"]

    chunk_vecs = {}
    for first, size, chunk_budget in args.chunks:  # the tokenisation chunks' sizes (embench/encoding/batching.py)
        chunk_budget = chunk_budget or default_budget

        def run_chunks(ts=texts, f=first, s=size, b=chunk_budget):
            with chunk_sizes(f, s):
                return Engine(enc, batch_tokens=b, cache_dir=None).embed(ts)

        label = f"embench@{chunk_budget}-chunks{first}/{size}"
        vecs, secs, peak = timed(run_chunks, lambda run_chunks=run_chunks: run_chunks(warm_texts), args.repeats)
        chunk_vecs[label] = record(label, vecs, secs, peak, first_chunk=first, chunk=size, batch_tokens=chunk_budget)

    st_modules = ([Transformer(str(folder), model_kwargs={"dtype": torch.bfloat16}),
                   Pooling(enc.model.config.hidden_size, pooling_mode="lasttoken")] if decoder else None)
    st = (SentenceTransformer(modules=st_modules, device=DEVICE) if decoder
          else SentenceTransformer(str(folder), device=DEVICE, model_kwargs={"dtype": torch.bfloat16}))
    st.max_seq_length = max_length
    st_vecs = {}
    for bs in dict.fromkeys([64, *args.st_batches]):
        def run_st(ts=texts, bs=bs):
            return st.encode(ts, batch_size=bs, convert_to_numpy=True, show_progress_bar=False)

        vecs, secs, peak = timed(run_st, lambda bs=bs: run_st(warm_texts, bs))
        st_vecs[bs] = record(f"st@{bs}", vecs.astype(np.float32), secs, peak, batch_size=bs)
    st = None
    empty_cache()

    plain = AutoModel.from_pretrained(folder, dtype=torch.bfloat16, attn_implementation="sdpa").to(DEVICE).eval()
    plain_vecs = {}
    for budget, cudnn in [(32768, True), (65536, True), (32768, False), (65536, False)]:
        def run_plain(ts=texts, b=budget, cudnn=cudnn):
            from torch.nn.attention import SDPBackend, sdpa_kernel

            kernels = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
            with sdpa_kernel(kernels + [SDPBackend.CUDNN_ATTENTION] if cudnn else kernels):
                return plain_loop(plain, tok, ts, b, "mean" if not decoder else "last", max_length)

        label = f"plain@{budget}" + ("" if cudnn else "-no-cudnn")
        vecs, secs, peak = timed(run_plain, lambda run_plain=run_plain: run_plain(warm_texts))
        plain_vecs[label] = record(label, vecs, secs, peak, batch_tokens=budget,
                                   padded_tokens=plain_padded_tokens(lengths, budget))
    plain = None
    empty_cache()

    ref = st_vecs[64]
    if name == "all-MiniLM-L6-v2":  # its pipeline normalises; the plain loop is mean pooling alone
        plain_vecs = {b: v / np.linalg.norm(v, axis=1, keepdims=True) for b, v in plain_vecs.items()}
    for label, vecs in ([(f"embench@{b}", v) for b, v in embench_vecs.items()] + [(f"st@{b}", v) for b, v in st_vecs.items()]
                        + list(plain_vecs.items()) + list(chunk_vecs.items()) + list(ablated_vecs.items())):
        c = cosines(vecs, ref)
        runs[label]["cosine_vs_st64_min"] = round(float(c.min()), 6)
        runs[label]["cosine_vs_st64_mean"] = round(float(c.mean()), 7)

    best = lambda prefix: max((r["frac_of_matmul"] for k, r in runs.items() if k.startswith(prefix)))  # noqa: E731
    ours = runs[f"embench@{default_budget}"]["frac_of_matmul"]
    summary = {
        "frac_of_matmul": ours,
        "vs_st_same_batch": round(ours / runs["st@64"]["frac_of_matmul"], 3),
        "vs_st_best_batch": round(ours / best("st@"), 3),
        "vs_plain_loop": round(ours / best("plain@"), 3),
        "embench_best_budget_frac": best("embench@"),
        "cosine_vs_st_min": runs[f"embench@{default_budget}"]["cosine_vs_st64_min"],
    }
    if summary_ablations:  # the fraction of the matmul rate with each measure undone
        summary["frac_of_matmul_ablated"] = summary_ablations
    if chunk_vecs:  # the best chunk sizes measured, against the engine's own (the first row)
        fastest = max(chunk_vecs, key=lambda k: runs[k]["frac_of_matmul"])
        summary["best_chunks"] = {"first_chunk": runs[fastest]["first_chunk"], "chunk": runs[fastest]["chunk"],
                                  "batch_tokens": runs[fastest]["batch_tokens"],
                                  "frac_of_matmul": runs[fastest]["frac_of_matmul"], "vs_default": round(
                                      runs[fastest]["frac_of_matmul"] / ours, 3)}
    out = {"non_embedding_params": n_params, "tokens": tokens, "texts": len(texts), "max_length": max_length,
           "pooling": pooling, "attn_implementation": getattr(enc.model.config, "_attn_implementation", None),
           "runs": runs, "summary": summary}
    for label, whole in (("embench+compile", False), ("embench+compile-whole", True)):
        if name not in (args.compile_whole if whole else args.compile):
            continue
        # torch.compile, layer by layer (the engine's --compile) or of the whole forward (the form it replaced): the
        # first pass pays the compilation, the second does not
        compiled = embench.load_model(str(folder), device=DEVICE, dtype="bf16", compile=not whole,
                                      pooling=None if name == "all-MiniLM-L6-v2" else pooling)
        if whole:
            compiled.model.compile(dynamic=True)
        if compiled_passes(label, compiled, texts, record, runs, ref):
            key = "compiled_whole" if whole else "compiled"
            summary[f"frac_of_matmul_{key}"] = runs[label]["frac_of_matmul"]
            summary[f"first_pass_seconds_{key}"] = runs[f"{label} (first pass)"]["seconds"]
            summary[f"vs_plain_loop_{key}"] = round(runs[label]["frac_of_matmul"] / best("plain@"), 3)
        compiled = None
    unpadded = None
    if name in args.unpadded:
        unpadded = unpadded_rows(name, folder, texts, warm_texts, pooling, default_budget, args, runs, summary, record, ref,
                                 best("plain@"))
    if name in args.cuda_graphs:
        graphs_rows(name, folder, texts, warm_texts, pooling, default_budget, runs, summary, record, ref,
                    embench_vecs[default_budget])
    print(f"  {name}: {json.dumps(summary)}", flush=True)
    if args.profile == name:
        out["profile"] = profile(enc, texts)
        if name in args.cuda_graphs and DEVICE == "cuda":  # the same pass with graphs, every shape captured first
            graphed = embench.load_model(str(folder), device=DEVICE, dtype="bf16", cuda_graphs=True,
                                         pooling=None if name == "all-MiniLM-L6-v2" else pooling)
            for _ in range(2):  # a shape's graph is captured at its second batch
                Engine(graphed, cache_dir=None).embed(texts)
            out["profile_cuda_graphs"] = profile(graphed, texts)
            graphed = None
        if unpadded is not None and unpadded.unpadded:  # the same pass unpadded
            out["profile_unpadded"] = profile(unpadded, texts)
    unpadded = None
    enc = None
    empty_cache()
    return out


def unpadded_rows(name: str, folder: Path, texts: list[str], warm_texts: list[str], pooling: str, budget: int, args,
                  runs: dict, summary: dict, record, ref: np.ndarray, plain_best: float):
    """embench with ``--unpadded`` (each batch one row of real tokens, variable-length flash attention:
    ``embench/models/unpadded_batch.py``), at the default budget and with ``--repeats``; returns the encoder (for a
    profile). On a CPU smoke run (``--tiny``) the path is forced on, so its reference attention runs."""
    import embench
    from embench.encoding.engine import Engine

    enc = embench.load_model(str(folder), device=DEVICE, dtype="bf16", unpadded=True,
                             pooling=None if name == "all-MiniLM-L6-v2" else pooling)
    if TINY and not DEVICE.startswith("cuda"):
        enc.unpadded = True
    label = f"embench-unpadded@{budget}"
    if not enc.unpadded:
        runs[label] = {"error": "load_model(..., unpadded=True) stayed padded here (see the warning)"}
        return enc

    def run(ts=texts):
        return Engine(enc, cache_dir=None).embed(ts)

    vecs, secs, peak = timed(run, lambda: run(warm_texts), args.repeats)
    record(label, vecs, secs, peak, batch_tokens=budget)
    cos = cosines(vecs, ref)
    runs[label]["cosine_vs_st64_min"] = round(float(cos.min()), 6)
    runs[label]["cosine_vs_st64_mean"] = round(float(cos.mean()), 7)
    summary["frac_of_matmul_unpadded"] = runs[label]["frac_of_matmul"]
    summary["vs_plain_loop_unpadded"] = round(runs[label]["frac_of_matmul"] / plain_best, 3)
    summary["cosine_vs_st_min_unpadded"] = runs[label]["cosine_vs_st64_min"]
    if name in args.unpadded_compile:  # and each layer compiled (--compile): the first pass pays the compilation
        compiled = embench.load_model(str(folder), device=DEVICE, dtype="bf16", unpadded=True, compile=True,
                                      pooling=None if name == "all-MiniLM-L6-v2" else pooling)
        compiled.unpadded = enc.unpadded
        if compiled_passes(f"{label}+compile", compiled, texts, record, runs, ref):
            summary["frac_of_matmul_unpadded_compiled"] = runs[f"{label}+compile"]["frac_of_matmul"]
    return enc


def compiled_passes(label: str, enc, texts: list[str], record, runs: dict, ref: np.ndarray) -> bool:
    """Rows ``LABEL (first pass)`` and ``LABEL`` of a compiled encoder: its first pass pays the compilation, the second
    does not. A failure is a figure too: the row's error. True when both passes ran."""
    from embench.encoding.engine import Engine

    try:
        for row in (f"{label} (first pass)", label):
            start = time.perf_counter()
            vecs = Engine(enc, cache_dir=None).embed(texts)
            sync()
            record(row, vecs, time.perf_counter() - start, peak_bytes())
            runs[row]["cosine_vs_st64_min"] = round(float(cosines(vecs, ref).min()), 6)
            runs[row]["cosine_vs_st64_mean"] = round(float(cosines(vecs, ref).mean()), 7)
        return True
    except Exception as e:
        runs[label] = {"error": f"{type(e).__name__}: {e}"[:500]}
        print("  compile failed:", runs[label]["error"], flush=True)
        return False


def graphs_rows(name: str, folder: Path, texts: list[str], warm_texts: list[str], pooling: str, budget: int,
                runs: dict, summary: dict, record, ref: np.ndarray, eager: np.ndarray) -> None:
    """embench with CUDA graphs per bucketed shape: a fresh encoder's first pass, the eager rows' warm-up and
    timed pass, and a steady pass (every shape captured), each with what the graphs did in it and its vectors
    against the eager engine's at the same budget (padding must change none beyond bf16 rounding)."""
    import embench
    from embench.encoding.engine import Engine

    graphed = embench.load_model(str(folder), device=DEVICE, dtype="bf16", cuda_graphs=True,
                                 pooling=None if name == "all-MiniLM-L6-v2" else pooling)
    graphed.model  # noqa: B018  (the weights are read before the clock starts, as the eager rows' warm-up reads them)

    def counts() -> dict:
        return dict(graphed.graphs.stats) if graphed.graphs is not None else {}  # off CUDA: no graphs (a warning)

    def one(label: str, ts: list[str]) -> None:
        before = counts()
        sync()
        peak_reset()
        start = time.perf_counter()
        vecs = Engine(graphed, batch_tokens=budget, cache_dir=None).embed(ts)
        sync()
        after = counts()
        record(label, vecs, time.perf_counter() - start, peak_bytes(),
               graphs={k: round(v - before.get(k, 0), 4) for k, v in after.items()})
        runs[label]["cosine_vs_st64_min"] = round(float(cosines(vecs, ref).min()), 6)
        runs[label]["cosine_vs_st64_mean"] = round(float(cosines(vecs, ref).mean()), 7)
        runs[label]["cosine_vs_eager_min"] = round(float(cosines(vecs, eager).min()), 7)

    try:
        one("embench+cuda-graphs (first pass)", texts)
        Engine(graphed, batch_tokens=budget, cache_dir=None).embed(warm_texts)  # the eager rows' warm-up
        one(f"embench+cuda-graphs@{budget}", texts)
        one("embench+cuda-graphs (steady)", texts)
    except Exception as e:  # a failure is a figure too
        runs["embench+cuda-graphs"] = {"error": f"{type(e).__name__}: {e}"[:500]}
        print("  cuda graphs failed:", runs["embench+cuda-graphs"]["error"], flush=True)
        return
    summary["frac_of_matmul_cuda_graphs"] = runs[f"embench+cuda-graphs@{budget}"]["frac_of_matmul"]
    summary["frac_of_matmul_cuda_graphs_steady"] = runs["embench+cuda-graphs (steady)"]["frac_of_matmul"]
    summary["cuda_graphs_vs_eager"] = round(summary["frac_of_matmul_cuda_graphs"] / runs[f"embench@{budget}"]["frac_of_matmul"], 3)
    summary["cosine_vs_eager_min_cuda_graphs"] = min(runs[k]["cosine_vs_eager_min"] for k in runs if k.startswith("embench+cuda"))
    summary["cosine_vs_st_min_cuda_graphs"] = runs[f"embench+cuda-graphs@{budget}"]["cosine_vs_st64_min"]


def profile(enc, texts: list[str]) -> str:
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    from embench.encoding.engine import Engine

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if DEVICE == "cuda" else [])  # --tiny on a CPU too
    with torch_profile(activities=activities) as prof:
        Engine(enc, cache_dir=None).embed(texts)
        sync()
    tables = gpu_rates.profile_tables(prof)
    print(tables, flush=True)
    return tables


def check_fp32(minilm: Path, texts: list[str]) -> dict:
    """all-MiniLM-L6-v2's vectors: fp32 on the GPU against fp32 on the CPU, and bf16 against fp32 (GPU)."""
    import embench
    from embench.encoding.engine import Engine

    sample = texts[:4000]
    gpu32 = Engine(embench.load_model(str(minilm), device=DEVICE, dtype="fp32"), cache_dir=None).embed(sample)
    cpu32 = Engine(embench.load_model(str(minilm), device="cpu", dtype="fp32"), cache_dir=None).embed(sample)
    gpu16 = Engine(embench.load_model(str(minilm), device=DEVICE, dtype="bf16"), cache_dir=None).embed(sample)
    out = {"texts": len(sample), "fp32_gpu_vs_cpu_min_cosine": float(cosines(gpu32, cpu32).min()),
           "bf16_vs_fp32_gpu_min_cosine": float(cosines(gpu16, gpu32).min())}
    print("  vectors:", json.dumps(out), flush=True)
    return out


def write_md(path: Path, result: dict) -> None:
    lines = [f"# Encoding on {result['gpu']}: embench against sentence-transformers and a plain loop", "",
             f"bf16 matmul rate measured in the run: {result['matmul_tflops']:.0f} TFLOP/s; texts: the {result['texts']} "
             f"unique texts of sts-all; torch {result['torch']}, transformers {result['transformers']}, "
             f"sentence-transformers {result['sentence_transformers']}. Written by `benchmarks/encode_gpu.py`.", "",
             "| model | embench (fraction of matmul) | vs ST batch 64 | vs ST best batch | vs plain loop | min cosine vs ST "
             "| with --compile (second pass) | with --cuda-graphs (same protocol / steady) | with --unpadded |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, m in result["models"].items():
        s = m["summary"]
        comp = f"{s['frac_of_matmul_compiled']:.3f}" if "frac_of_matmul_compiled" in s else "not run"
        graphs = (f"{s['frac_of_matmul_cuda_graphs']:.3f} / {s['frac_of_matmul_cuda_graphs_steady']:.3f}"
                  if "frac_of_matmul_cuda_graphs" in s else "not run")
        unpadded = f"{s['frac_of_matmul_unpadded']:.3f}" if "frac_of_matmul_unpadded" in s else "not run"
        lines.append(f"| {name} | {s['frac_of_matmul']:.3f} | {s['vs_st_same_batch']:.2f}x | {s['vs_st_best_batch']:.2f}x | "
                     f"{s['vs_plain_loop']:.2f}x | {s['cosine_vs_st_min']:.5f} | {comp} | {graphs} | {unpadded} |")
    lines += ["", "Every run (seconds, tokens/s, fraction of the matmul rate, peak GPU memory):", ""]
    for name, m in result["models"].items():
        lines += [f"## {name}", "", f"{m['non_embedding_params'] / 1e6:.0f}M non-embedding parameters, {m['tokens']} tokens, "
                  f"pooling {m['pooling']}, attention {m['attn_implementation']}", "",
                  "| run | s | tokens/s | of matmul | padded tokens / real | peak GiB | min cosine vs ST@64 | "
                  "CUDA graphs in the pass |", "|---|---:|---:|---:|---:|---:|---:|---|"]
        for label, r in m["runs"].items():
            if "error" in r:
                lines.append(f"| {label} | failed: {r['error']} | | | | | | |")
                continue
            graphs = ", ".join(f"{k} {v}" for k, v in r.get("graphs", {}).items())
            padded = f"{r['padded_tokens'] / m['tokens']:.3f}" if "padded_tokens" in r else ""
            lines.append(f"| {label} | {r['seconds']:.3f} | {r['tokens_per_s']:,} | {r['frac_of_matmul']:.3f} | "
                         f"{padded} | {r['peak_gib']:.2f} | {r['cosine_vs_st64_min']:.5f} | {graphs} |")
        lines.append("")
    if "vectors" in result:
        lines += ["## Same vectors", "", "```json", json.dumps(result["vectors"], indent=1), "```", ""]
    path.write_text("\n".join(lines))


def parse_chunks(value: str) -> list[tuple[int, int, int | None]]:
    """``FIRST/SIZE[@BUDGET],...`` as (first, size, budget or None)."""
    out = []
    for item in (x for x in value.split(",") if x):
        sizes, _, budget = item.partition("@")
        first, size = (int(v) for v in sizes.split("/"))
        out.append((first, size, int(budget) if budget else None))
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minilm", type=Path, required=True, help="all-MiniLM-L6-v2's folder (its tokenizer serves the shapes)")
    ap.add_argument("--models", default="bert-base,bert-large,qwen2-1.5b,all-MiniLM-L6-v2")
    ap.add_argument("--budgets", default="32768", type=lambda s: [int(x) for x in s.split(",") if x])
    ap.add_argument("--compile", default="bert-base,qwen2-1.5b", type=lambda s: [x for x in s.split(",") if x],
                    help="models also run with load_model(..., compile=True): each layer compiled")
    ap.add_argument("--compile-whole", default="", type=lambda s: [x for x in s.split(",") if x],
                    help="models also run with the whole forward compiled (the form --compile replaced)")
    ap.add_argument("--cuda-graphs", default="bert-base,all-MiniLM-L6-v2", type=lambda s: [x for x in s.split(",") if x],
                    help="models also run with load_model(..., cuda_graphs=True)")
    ap.add_argument("--unpadded", default="bert-base,qwen2-1.5b", type=lambda s: [x for x in s.split(",") if x],
                    help="models also run with load_model(..., unpadded=True): batches as one row of real tokens")
    ap.add_argument("--unpadded-compile", default="", type=lambda s: [x for x in s.split(",") if x],
                    help="of the --unpadded models, those also run unpadded with each layer compiled")
    ap.add_argument("--ablations", default="", type=lambda s: [x for x in s.split(",") if x],
                    help="models also run with each host-side measure undone (the gc freeze, the prepared mask)")
    ap.add_argument("--chunks", default="", type=parse_chunks,
                    help="FIRST/SIZE[@BUDGET],...: also run embench with these tokenisation chunks (first chunk, then each), "
                         "at the default token budget or BUDGET")
    ap.add_argument("--repeats", type=int, default=1,
                    help="timed passes of each embench row (default budget, --budgets, --chunks): the median is kept")
    ap.add_argument("--st-batches", default="128,256,512,1024", type=lambda s: [int(x) for x in s.split(",") if x])
    ap.add_argument("--profile", default=None, help="a model name: add a profiler table of one embench pass")
    ap.add_argument("--check-fp32", action="store_true")
    ap.add_argument("--out", type=Path, default=Path("reports/benchmarks/encode_gpu"))
    ap.add_argument("--tiny", action="store_true", help="tiny shapes on --device: a smoke test of this script")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--limit", type=int, default=None, help="only the first N texts")
    args = ap.parse_args(argv)
    global DEVICE, TINY
    DEVICE, TINY = args.device, args.tiny
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import sentence_transformers
    import transformers

    texts = sts_all_texts()[: args.limit]
    rate = matmul_rate()
    result = {"gpu": torch.cuda.get_device_name() if DEVICE == "cuda" else DEVICE, "matmul_tflops": rate / 1e12, "texts": len(texts),
              "torch": torch.__version__, "transformers": transformers.__version__,
              "sentence_transformers": sentence_transformers.__version__, "models": {}}
    print(f"{result['gpu']}: bf16 matmul {rate / 1e12:.0f} TFLOP/s; {len(texts)} texts", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            folder = args.minilm if name == "all-MiniLM-L6-v2" else build_shape(name, args.minilm, Path(tmp))
            result["models"][name] = bench_model(name, folder, texts, args, rate)
            save(result, args.out)  # after each model: a run cut short keeps what it measured
    if args.check_fp32:
        result["vectors"] = check_fp32(args.minilm, texts)
        save(result, args.out)
    return result


def save(result: dict, out: Path) -> None:
    result["summary"] = {name: m["summary"] for name, m in result["models"].items()}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    write_md(out.with_suffix(".md"), result)


if __name__ == "__main__":
    main()
