"""Training speed: embench's trainer against sentence-transformers' trainer.

Both train unsupervised SimCSE on the same sentences (each sentence is its own positive under two
dropout masks; in-batch negatives; cosine / 0.05, i.e. MultipleNegativesRankingLoss with scale 20)
from the same model, with the same batch size, maximum length, learning rate, warm-up and thread
count. Steps/s is measured per step after ``--warmup`` steps (evaluation and saving excluded on
both sides); the two trainers alternate ``--repeats`` times and the medians are compared.

    python benchmarks/train.py --model all-MiniLM-L6-v2 --batch-size 16 --max-length 32 --steps 30 \
        --out reports/training/benchmark.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch


def sentences(n: int) -> list[str]:
    root = Path(os.environ.get("EMBENCH_DATA", "~/.cache/embench/data")).expanduser()
    with gzip.open(root / "corpora" / "wiki1m-prefix.txt.gz", "rt", encoding="utf-8") as f:
        out = [line.strip() for line in f if line.strip()]
    return out[:n]


def ours(model: str, texts: list[str], args, tmp: Path) -> float:
    from embench.train import make_config, train

    corpus = tmp / "corpus.txt"
    corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
    cfg = make_config(method="unsup-simcse", model=model, data=[str(corpus)], out=str(tmp / "ours"), pooling="mean",
                      mlp="none", batch_size=args.batch_size, max_length=args.max_length, lr=3e-5, warmup_ratio=0.1,
                      max_steps=args.warmup + args.steps, log_steps=1, eval_steps=0, save_steps=10**9, progress=False,
                      device=args.device, precision="bf16-mixed" if args.device.startswith("cuda") else "fp32")
    hist = [h for h in train(cfg).history if "steps_per_s" in h][args.warmup :]
    return len(hist) / sum(1.0 / h["steps_per_s"] for h in hist)


def sentence_transformers_trainer(model: str, texts: list[str], args, tmp: Path) -> float:
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.losses import MultipleNegativesRankingLoss
    from transformers import TrainerCallback

    from embench.models.model_names import resolve_model_path

    folder = resolve_model_path(model)[0] or model
    st = SentenceTransformer(str(folder), device=args.device)
    st.max_seq_length = args.max_length
    stamps: list[float] = []

    class Clock(TrainerCallback):
        def on_step_end(self, *a, **k):
            stamps.append(time.perf_counter())

        def on_step_begin(self, *a, **k):
            if not stamps:
                stamps.append(time.perf_counter())

    targs = SentenceTransformerTrainingArguments(
        output_dir=str(tmp / "st"), per_device_train_batch_size=args.batch_size, learning_rate=3e-5, warmup_ratio=0.1,
        max_steps=args.warmup + args.steps, logging_steps=10**6, save_strategy="no", report_to="none", seed=42,
        dataloader_drop_last=True, use_cpu=args.device == "cpu", bf16=args.device.startswith("cuda"), disable_tqdm=True,
    )
    data = Dataset.from_dict({"anchor": texts, "positive": texts})
    trainer = SentenceTransformerTrainer(model=st, args=targs, train_dataset=data,
                                         loss=MultipleNegativesRankingLoss(st, scale=20.0), callbacks=[Clock()])
    trainer.train()
    times = stamps[args.warmup :]  # stamps[0] is the start of step 1
    return (len(times) - 1) / (times[-1] - times[0])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max-length", type=int, default=32)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="cpu, or cuda (both trainers in bf16 autocast)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(args.threads)
    texts = sentences(args.batch_size * (args.warmup + args.steps + 2))
    runs: dict[str, list[float]] = {"embench": [], "sentence-transformers": []}
    with tempfile.TemporaryDirectory() as d:
        for r in range(args.repeats):
            for name, fn in (("embench", ours), ("sentence-transformers", sentence_transformers_trainer)):
                tmp = Path(d) / f"{name}-{r}"
                tmp.mkdir()
                sps = fn(args.model, texts, args, tmp)
                runs[name].append(sps)
                print(f"{name}: {sps:.3f} steps/s", flush=True)
    med = {k: statistics.median(v) for k, v in runs.items()}
    result = {
        "model": args.model, "batch_size": args.batch_size, "max_length": args.max_length, "steps": args.steps,
        "warmup": args.warmup, "threads": args.threads, "device": args.device, "machine": platform.processor() or platform.machine(),
        "steps_per_s": runs, "median_steps_per_s": med, "ratio_embench_over_st": med["embench"] / med["sentence-transformers"],
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name() if args.device.startswith("cuda") else None,
    }
    print(f"ratio embench / sentence-transformers: {result['ratio_embench_over_st']:.2f}x")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
