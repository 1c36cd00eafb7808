"""The trainer on a GPU: throughput, model FLOP/s and peak memory of each precision and memory
option, then one real run of the SimCSE recipe with model selection on STS-B dev.

Variants (unsupervised SimCSE on the same sentences, the same model, batch and length): fp32;
bf16 autocast over fp32 weights; bf16 weights; bf16 autocast with gradient checkpointing; the same
global batch as 4 accumulated micro-batches (GradCache); LoRA adapters. Each runs ``--steps``
steps after ``--warmup``; MFU is 6 N tokens/s against the GPU's dense bf16 peak (``--peak-tflops``).

    python benchmarks/train_gpu.py --model build/gpu/minilm-fp16 --data build/gpu/data --out reports/training/gpu
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

LLM_PROMPT = 'This sentence : "{text}" means in one word:"'  # PromptEOL (Jiang et al., 2023), as BeLLM builds on
VARIANTS = {  # the encoder's own mean pooling
    "fp32": {"precision": "fp32"},
    "bf16-mixed": {"precision": "bf16-mixed"},
    "bf16-weights": {"precision": "bf16"},
    "bf16-mixed+checkpointing": {"precision": "bf16-mixed", "gradient_checkpointing": True},
    "bf16-mixed+accumulation-4": {"precision": "bf16-mixed", "grad_accumulation": 4},
    "bf16-mixed+lora-r16": {"precision": "bf16-mixed", "lora_r": 16, "lora_alpha": 32, "lr": 1e-4},
}


def throughput(args, name: str, extra: dict, tmp: Path, model: str | None = None, batch_size: int | None = None,
               max_length: int | None = None) -> dict:
    from embench.train import make_config, train

    torch.cuda.reset_peak_memory_stats()
    cfg = make_config(method="unsup-simcse", model=model or args.model, data=["corpora"], data_root=args.data,
                      out=str(tmp / name), mlp="none", pooling=None if model else "mean", batch_size=batch_size or args.batch_size,
                      max_length=max_length or args.max_length, lr=extra.pop("lr", 3e-5), max_steps=args.warmup + args.steps,
                      log_steps=1, eval_steps=0, save_steps=10**9, progress=False, device="cuda", overwrite=True, **extra)
    start = time.perf_counter()
    result = train(cfg)
    hist = [h for h in result.history if "steps_per_s" in h][args.warmup:]
    tflops = statistics.median(h["model_tflops_per_s"] for h in hist)
    return {"variant": name, "steps_per_s": statistics.median(h["steps_per_s"] for h in hist),
            "tokens_per_s": statistics.median(h["tokens_per_s"] for h in hist), "model_tflops_per_s": tflops,
            "mfu": tflops / args.peak_tflops, "peak_memory_gib": torch.cuda.max_memory_allocated() / 2**30,
            "last_loss": result.last_loss, "wall_s": time.perf_counter() - start}


LLM_VARIANTS = {
    "bf16-mixed": {"precision": "bf16-mixed"},
    "bf16-weights": {"precision": "bf16"},
    "bf16-weights+checkpointing": {"precision": "bf16", "gradient_checkpointing": True},
    "bf16-mixed+lora-r16": {"precision": "bf16-mixed", "lora_r": 16, "lora_alpha": 32, "lr": 1e-4},
}


def random_llm(args, tmp: Path) -> str:
    """A randomly initialised Llama of ``--llm-layers`` x ``--llm-hidden`` with the model's tokenizer:
    the decoder-LLM path (causal-lm family, last token, left padding, prompt) at a size where the GPU works."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaModel

    tok = AutoTokenizer.from_pretrained(args.model)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=args.llm_hidden, num_hidden_layers=args.llm_layers,
                      num_attention_heads=args.llm_hidden // 128, num_key_value_heads=args.llm_hidden // 128,
                      intermediate_size=int(args.llm_hidden * 8 / 3) // 64 * 64, max_position_embeddings=512)
    folder = tmp / "random-llama"
    LlamaModel(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def recipe_run(args, tmp: Path) -> dict:
    """The simcse-unsup recipe (batch 64, lr 3e-5, max length 32, STS-B dev every --eval-steps)."""
    from embench.train import make_config, train

    cfg = make_config(recipe="simcse-unsup", model=args.model, data_root=args.data, out=str(tmp / "recipe"),
                      eval_steps=args.eval_steps, progress=False, device="cuda", log_steps=10)
    start = time.perf_counter()
    r = train(cfg)
    evals = [{"step": h["step"], "stsb_dev": h["eval/STSBenchmark-dev"]} for h in r.history if "best" in h]
    return {"recipe": "simcse-unsup", "steps": r.steps, "initial_stsb_dev": r.initial_score, "best_stsb_dev": r.best_score,
            "best_step": r.best_step, "evaluations": evals, "wall_s": time.perf_counter() - start,
            "precision": json.loads((tmp / "recipe" / "train_config.json").read_text())["precision"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True, help="data root")
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--max-length", type=int, default=32)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--eval-steps", type=int, default=50)
    ap.add_argument("--peak-tflops", type=float, default=989.0, help="dense bf16 peak (H100 SXM: 989)")
    ap.add_argument("--llm-layers", type=int, default=0, help="> 0: also a random Llama of this depth")
    ap.add_argument("--llm-hidden", type=int, default=2048)
    ap.add_argument("--llm-batch-size", type=int, default=64)
    ap.add_argument("--llm-max-length", type=int, default=128)
    ap.add_argument("--only-llm", action="store_true")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "batch_size": args.batch_size,
              "max_length": args.max_length, "variants": []}
    with tempfile.TemporaryDirectory() as d:
        for name, extra in ({} if args.only_llm else VARIANTS).items():
            row = throughput(args, name, dict(extra), Path(d))
            report["variants"].append(row)
            print(json.dumps(row), flush=True)
        if not args.only_llm:
            report["recipe_run"] = recipe_run(args, Path(d))
            print(json.dumps(report["recipe_run"]), flush=True)
        if args.llm_layers:
            llm = random_llm(args, Path(d))
            report["llm"] = {"layers": args.llm_layers, "hidden": args.llm_hidden, "batch_size": args.llm_batch_size,
                             "max_length": args.llm_max_length, "prompt": LLM_PROMPT, "variants": []}
            for name, extra in LLM_VARIANTS.items():
                row = throughput(args, "llm-" + name, {**extra, "prompt": LLM_PROMPT}, Path(d), llm,
                                 args.llm_batch_size, args.llm_max_length)
                report["llm"]["variants"].append(row)
                print(json.dumps(row), flush=True)
    (out / ("train_gpu_llm.json" if args.only_llm else "train_gpu.json")).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
