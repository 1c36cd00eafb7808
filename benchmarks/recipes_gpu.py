"""Every training recipe at its paper's shape on one GPU (issue 31): peak memory, steps/s, tokens/s, model FLOP
utilisation and the time the whole recipe would take; SimCSE beside sentence-transformers' trainer and a plain loop.

    PYTHONPATH=. python benchmarks/recipes_gpu.py --device cuda --data build/gpu/data --out OUT/recipes
    python benchmarks/recipes_gpu.py --tiny --device cpu --out OUT         # a smoke run: 2 layers x 64

Each recipe runs with every setting its ``RECIPES`` entry gives (batch, maximum length, method, pooling, LoRA,
precision, ...); only the model (random weights of the paper's configuration: ``recipes_gpu_models.py``, or
``NAME@SHAPE``), the step count, the device and the output are set here, with evaluation off. A recipe that
needs a second tower (JTCSE) gets a second random tower of the same shape, MultiCSR's frozen guide a random
BERT-base, and one with no data of its own (MultiCSR's generated triplets) the data root's ``snli``. BeLLM's
4-bit QLoRA is measured with bitsandbytes on CUDA; elsewhere the row runs ``load_kbit 0`` (LoRA over
unquantised weights) and says so. The trainer is embench's own, fit() and all (its memory fitting, micro-batches and
checkpointing included: the row records what the run ended with), except that it writes no weights: a
7B resume state is tens of GB of disk, not a training step.

Rates are the trainer's own per-step readings (``embench/train/throughput.py``: real tokens), medians after
``--warmup`` steps. MFU = 6 N tokens/s over the bf16 matrix-multiply rate measured in this run, N = the
non-embedding parameters of the trained module, trained and frozen alike (issue 31's table): under LoRA the
frozen base still runs its forward (2 N a token) and the backward through its activations (2 N), and with the
gradient checkpointing a 7B step needs, the recomputed forward (2 N): 6 N per token as for full training,
the adapters' own weight gradients left out. JTCSE's N holds both towers; MultiCSR's frozen guide (forward
only, no gradient) is not in N. A row that fails (out of memory included) is a row with the error's first line.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # the helpers beside this file; embench from this checkout

from gpu_rates import matmul_rate, non_embedding_params, profile_tables, sync  # noqa: E402
from recipes_gpu_models import GUIDE_SHAPE, RECIPE_SHAPE, SHAPES, Folders, is_decoder  # noqa: E402
from recipes_gpu_peers import first_line, lora_peers, simcse_peers  # noqa: E402
from recipes_gpu_report import save  # noqa: E402

# the papers' training sets, where the notes state their size (shared/papers/*.notes.md)
PAPER_DATA = {"simcse-unsup": ("Wiki1M", 10**6), "jtcse-bert": ("Wiki1M", 10**6), "jtcse-roberta": ("Wiki1M", 10**6),
              "simcse-sup": ("SNLI+MNLI, 314k triplets", 314_000)}
FIT_KEYS = ("micro_batches", "gradient_checkpointing_used", "grad_accumulation_chosen", "grad_accumulation",
            "gradient_checkpointing")


def bench_trainer(measured_from: int, profile_steps: range | None = None, profile_to: Path | None = None):
    """The trainer class of a row. The device's peak memory is counted again from step ``measured_from`` (the first
    measured step): the warm-up may hold a step that ran out of memory before the fitting split it, whose peak is
    the cap, not the run's. With ``profile_steps``, those steps run under ``torch.profiler``, its tables to
    ``profile_to``."""
    from embench.train.trainer import Trainer

    class BenchTrainer(Trainer):
        """embench's Trainer writing no weights (resume state, kept checkpoint); N counted after setup."""

        def setup(self) -> None:
            super().setup()
            self.non_embedding = non_embedding_params(self.model)

        def step(self, step: int):
            if step == measured_from and self.device.startswith("cuda"):
                self.warmup_peak = torch.cuda.max_memory_allocated()
                torch.cuda.reset_peak_memory_stats()
            if not profile_steps or step not in profile_steps:
                return super().step(step)
            from torch.profiler import ProfilerActivity, profile

            activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
            if step == profile_steps.start:
                self.profiler = profile(activities=activities)
                self.profiler.start()
            out = super().step(step)
            if step == profile_steps[-1]:
                sync(self.device)
                self.profiler.stop()
                profile_to.write_text(f"steps {profile_steps.start}-{profile_steps[-1]} (0-based)\n"
                                      + profile_tables(self.profiler))
            return out

        def save_resume(self, step: int) -> None:
            return None

        def export(self, folder, step, extra=None):
            return Path(folder)

    return BenchTrainer


def kbit_usable(device: str) -> bool:
    """QLoRA rows on CUDA with bitsandbytes (the trainer quantises on the CPU too, but a CPU run of this benchmark is
    its smoke test: it keeps unquantised weights, and no saved weights folder)."""
    try:
        import bitsandbytes  # noqa: F401
    except ImportError:
        return False
    return device.startswith("cuda")


def overrides(name: str, shape: str, folders: Folders, args) -> tuple[dict, dict]:
    """The make_config keywords that put recipe ``name`` on ``shape`` here, and what the row says of them."""
    from embench.train.methods import METHODS
    from embench.train.recipes import RECIPES

    recipe = RECIPES.get(name)
    vals = recipe.values
    over: dict = {"model": str(folders.config(shape)), "from_scratch": True}
    said: dict = {"data_stand_in": None, "kbit_note": None}
    if "tower2" in recipe.requires:
        over["tower2"] = over["model"]  # from_scratch: a second random initialisation of the same shape
    if folders.tiny and vals.get("cross_layers"):  # JTCSE's CAELs must divide the depth: 6 of 12, all of a tiny 2
        over["cross_layers"] = folders.hf_config(shape).num_hidden_layers
    if vals.get("false_negative_filter"):
        over["false_negative_filter"] = str(folders.weights(GUIDE_SHAPE))
    if not vals.get("data"):
        over["data"] = ["snli"] if METHODS.get(vals["method"]).data_kind == "triplets" else ["corpora"]
        said["data_stand_in"] = over["data"][0]
    if vals.get("load_kbit"):
        if kbit_usable(args.device):  # quantised as weights are read: a saved folder, not from_scratch
            over.update(model=str(folders.weights(shape, torch.bfloat16)), from_scratch=False)
        else:
            over["load_kbit"] = 0
            said["kbit_note"] = (f"load_kbit {vals['load_kbit']} is measured with bitsandbytes on CUDA, not here: "
                                 "LoRA over unquantised weights (load_kbit 0)")
    return {**over, **args.set}, said


def run_recipe(label: str, name: str, shape: str, folders: Folders, args, rate: float, tmp: Path) -> dict:
    from embench.train import make_config

    cuda = args.device.startswith("cuda")
    warmup, steps = (args.llm_warmup, args.llm_steps) if is_decoder(shape) else (args.warmup, args.steps)
    row: dict = {"recipe": label, "model": folders.describe(shape), "warmup": warmup, "steps": steps}
    out = tmp / "runs" / label.replace("@", "-")
    trainer = None
    start = time.perf_counter()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.reset_accumulated_memory_stats()  # this row's allocator retries only
    try:
        over, said = overrides(name, shape, folders, args)
        row.update(said)
        cfg = make_config(recipe=name, **over, max_steps=warmup + steps, eval_steps=0, save_steps=10**9, save_every=0,
                          log_steps=1, progress=False, device=args.device, data_root=args.data, out=str(out), overwrite=True)
        row.update(batch_size=cfg.batch_size, max_length=cfg.max_length, lora_r=cfg.lora_r, load_kbit=cfg.load_kbit,
                   epochs=cfg.epochs, data=cfg.data)
        profiled = args.profile and label in args.profile
        trainer = bench_trainer(warmup, range(warmup, warmup + min(2, steps)) if profiled else None,
                                args.out / f"profile-{label.replace('@', '-')}.txt")(cfg)
        result = trainer.fit()
        hist = [h for h in result.history if "steps_per_s" in h][warmup:]
        sps = statistics.median(h["steps_per_s"] for h in hist)
        tps = statistics.median(h["tokens_per_s"] for h in hist)
        padded = statistics.median(h.get("padded_tokens_per_s", 0.0) for h in hist)
        n = trainer.non_embedding
        # mfu counts real tokens (the work a user wants done); mfu_padded the padding too (the device's work,
        # comparable with a loop over fixed-length random ids)
        row.update(status="ok", steps_per_s=sps, s_per_step=1 / sps, tokens_per_s=tps, tokens_per_step=tps / sps,
                   padded_tokens_per_step=padded / sps, non_embedding_params=n, mfu=6 * n * tps / rate,
                   mfu_padded=6 * n * padded / rate, last_loss=result.last_loss)
        row.update(fit_record(out, result.history))
        row.update(whole_recipe(name, row))
    except Exception as e:  # out of memory, a missing package, anything: a row, never a crash of the benchmark
        oom = isinstance(e, torch.OutOfMemoryError) or "out of memory" in str(e).lower()
        row.update(status="out of memory" if oom else "failed", error=first_line(e))
        if out.is_dir():
            row.update(fit_record(out, []))
    finally:
        warmup_peak = getattr(trainer, "warmup_peak", None)
        trainer = None
        gc.collect()
        # the measured steps' peak; the warm-up's beside it (a step that ran out of memory shows there, at the cap)
        row["peak_memory_gib"] = torch.cuda.max_memory_allocated() / 2**30 if cuda else None
        row["warmup_peak_memory_gib"] = warmup_peak / 2**30 if warmup_peak is not None else None
        # the caching allocator's retries (blocks freed and allocated again once the cap is reached: device syncs)
        row["alloc_retries"] = torch.cuda.memory_stats().get("num_alloc_retries") if cuda else None
        if cuda:
            torch.cuda.empty_cache()
        row["wall_s"] = time.perf_counter() - start
    return row


def fit_record(out: Path, history: list[dict]) -> dict:
    """How the steps ran in the end (micro-batches, checkpointing, precision): train_config.json, then the last
    metrics record that says it (a split chosen after an out of memory); null where neither does."""
    path = out / "train_config.json"
    conf = json.loads(path.read_text()) if path.is_file() else {}
    got = {k: conf.get(k) for k in FIT_KEYS}
    for rec in history:
        got.update({k: rec[k] for k in FIT_KEYS if k in rec})
    return {"fit": got, "precision": conf.get("precision"), "examples": conf.get("examples"),
            "unpadded_used": conf.get("unpadded_used")}  # passes as rows of real tokens (--set unpadded=1)


def whole_recipe(name: str, row: dict) -> dict:
    """The recipe's steps (epochs x ceil(examples / batch), as the trainer counts them) x the measured s/step, on this
    data root's data and, where the paper's training set size is known, on that."""
    def hours(examples: int | None) -> tuple[int | None, float | None]:
        if not examples:
            return None, None
        total = max(1, math.ceil(row["epochs"] * -(-examples // row["batch_size"])))
        return total, total * row["s_per_step"] / 3600

    steps, h = hours(row["examples"])
    data, paper = PAPER_DATA.get(name, (None, None))
    paper_steps, paper_h = hours(paper)
    return {"recipe_steps": steps, "recipe_hours": h, "paper_data": data, "paper_recipe_steps": paper_steps,
            "paper_recipe_hours": paper_h}


def parse_set(items: list[str]) -> dict:
    import yaml

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set {item}: give KEY=VALUE")
        out[key.replace("-", "_")] = yaml.safe_load(value)
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recipes", default="all", help="comma-separated NAME, NAME@SHAPE (SHAPES in recipes_gpu_models.py) or all")
    ap.add_argument("--steps", type=int, default=20, help="measured steps of an encoder recipe")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--llm-steps", type=int, default=3, help="measured steps of a decoder (7B) recipe")
    ap.add_argument("--llm-warmup", type=int, default=2)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--data", default=None, help="data root (default: EMBENCH_DATA)")
    ap.add_argument("--tokenizer", default=None, help="a tokenizer folder (default: all-MiniLM-L6-v2's)")
    ap.add_argument("--tiny", action="store_true", help="2 layers x 64 of every shape: a smoke run on any device")
    ap.add_argument("--no-peers", action="store_true", help="leave out every peer (sentence-transformers' trainer, the plain loops)")
    ap.add_argument("--simcse-batches", default="", help="also these batch sizes for SimCSE against the plain loop, e.g. 64,512")
    ap.add_argument("--compile-peers", action="store_true", help="SimCSE with --compile beside the plain compiled loop (CUDA)")
    ap.add_argument("--lora-peer-batches", default="64,128",
                    help="triplet batches of the plain LoRA loop run before the bellm row (issue 31's: 64,128); '' for none")
    ap.add_argument("--no-simcse-peers", action="store_true",
                    help="leave out SimCSE's peers (sentence-transformers' trainer, the plain SimCSE loop); keep the LoRA loop")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a training option for every recipe")
    ap.add_argument("--memory-gib", type=float, default=None,
                    help="cap this process's GPU memory (e.g. 80 on a 141 GB H200: issue 31's 80 GB card); the trainer's fitting sees the cap")
    ap.add_argument("--profile", default="", type=lambda v: [x.strip() for x in v.split(",") if x.strip()],
                    help="row labels (e.g. bellm): two measured steps of each under torch.profiler, OUT/profile-LABEL.txt")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    args.set = parse_set(args.set)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.tiny:  # a smoke run: fewer steps; on a CPU fp32, as it has no fast half precision (fp16 is emulated)
        for key, value in (("steps", 1), ("warmup", 1), ("llm_steps", 1), ("llm_warmup", 1)):
            if getattr(args, key) == ap.get_default(key):
                setattr(args, key, value)
        if not args.device.startswith("cuda"):
            args.set.setdefault("precision", "fp32")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from embench.models.model_names import resolve_model_path
    from embench.train.recipes import RECIPES

    asked = [n.strip() for n in args.recipes.split(",") if n.strip()]
    names = list(dict.fromkeys(x for n in asked for x in (RECIPES.names() if n == "all" else [n])))
    todo = []  # (row label, recipe, shape or None)
    for label in names:
        recipe, _, shape = label.partition("@")
        recipe = RECIPES.canonical(recipe)
        shape = shape or RECIPE_SHAPE.get(recipe)
        todo.append((label, recipe, shape if shape in SHAPES else None))
    tokenizer = args.tokenizer or resolve_model_path("all-MiniLM-L6-v2")[0]
    if args.memory_gib and args.device.startswith("cuda"):
        index = torch.device(args.device).index or 0
        total = torch.cuda.get_device_properties(index).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, args.memory_gib * 2**30 / total), index)
    rate = matmul_rate(args.device)
    report = {"device": torch.cuda.get_device_name() if args.device.startswith("cuda") else args.device,
              "matmul_tflops": rate / 1e12, "versions": versions(), "tiny": args.tiny, "set": args.set,
              "memory_cap_gib": args.memory_gib,
              "tokenizer": "all-MiniLM-L6-v2's (BERT uncased WordPiece) for every shape; configs keep the papers' vocabularies",
              "rows": [], "peers": []}
    print(f"{report['device']}: bf16 matmul {rate / 1e12:.1f} TFLOP/s", flush=True)

    def peer_row(row: dict) -> None:
        report["peers"].append(row)
        print(json.dumps(row, default=str), flush=True)
        save(report, args.out)

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        folders = Folders(tmp / "models", Path(tokenizer), args.tiny, args.device)
        # the encoders, the peers, then the 7B: what ran is saved after each row, should the last one not end in time
        encoders = [t for t in todo if not (t[2] and is_decoder(t[2]))]
        for i, (label, recipe, shape) in enumerate(encoders + [t for t in todo if t not in encoders]):
            if i == len(encoders) and not (args.no_peers or args.no_simcse_peers):
                simcse_peers(folders, args, rate, tmp, run_recipe, peer_row)
            if recipe == "bellm" and args.lora_peer_batches and not args.no_peers:
                lora_peers(folders, args, rate, peer_row)
            report["rows"].append({"recipe": label, "status": "did not finish: the run was stopped during it"})
            save(report, args.out)  # what a time limit that ends the run here leaves
            row = (run_recipe(label, recipe, shape, folders, args, rate, tmp) if shape else
                   {"recipe": label, "status": f"not run: no paper shape known (give NAME@SHAPE, SHAPE one of {', '.join(SHAPES)})"})
            report["rows"][-1] = row
            print(json.dumps(row, default=str), flush=True)
            save(report, args.out)
        if len(encoders) == len(todo) and not (args.no_peers or args.no_simcse_peers):
            simcse_peers(folders, args, rate, tmp, run_recipe, peer_row)
    return report


def versions() -> dict:
    import transformers

    out = {"torch": torch.__version__, "transformers": transformers.__version__}
    for name in ("peft", "sentence_transformers", "datasets", "bitsandbytes"):
        try:
            out[name] = __import__(name).__version__
        except ImportError:
            out[name] = None
    return out


if __name__ == "__main__":
    main()
