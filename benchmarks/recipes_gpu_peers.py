"""The references beside the SimCSE recipe's row in ``recipes_gpu.py``, at the same shape (BERT-base, the
recipe's batch and maximum length, bf16 autocast over fp32 weights on a GPU, fp32 on a CPU):

* sentence-transformers' trainer with MultipleNegativesRankingLoss (scale 20 = 1 / 0.05), each sentence its
  own positive: ``benchmarks/train.py``'s peer function, reused. It needs the ``datasets`` package; without it
  the row says so.
* a plain loop, the 40 lines anyone would write (issue 31's calibration): the two dropout views as one
  batch, [CLS] vectors, cosine / 0.05, cross-entropy, fused AdamW, no host sync inside the loop; with
  ``--compile-peers`` also through ``torch.compile``, beside embench's ``--compile`` (CUDA only: compiling on
  a CPU takes minutes). ``--simcse-batches 64,512`` repeats embench and the plain loops at those batches
  (issue 31's targets: at least the plain compiled loop's speed at 64 and 512).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from gpu_rates import non_embedding_params, sync


def first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"[:300]


def st_trainer(folder: Path, texts: list[str], batch: int, max_length: int, warmup: int, steps: int, device: str,
               tmp: Path) -> dict:
    """Steps/s of sentence-transformers' trainer (a row that says why when it cannot run)."""
    row = {"name": "sentence-transformers trainer (MNRL)", "batch_size": batch, "max_length": max_length}
    try:
        import datasets  # noqa: F401
    except ImportError as e:  # not installed, or installed against another pyarrow: which one is said
        missing = isinstance(e, ModuleNotFoundError) and e.name == "datasets"
        return {**row, "status": "not run: datasets not installed" if missing else f"not run: {first_line(e)}"}
    import sentence_transformers
    import train as peer  # benchmarks/train.py

    args = argparse.Namespace(batch_size=batch, max_length=max_length, warmup=warmup, steps=steps, device=device)
    try:
        sps = peer.sentence_transformers_trainer(str(folder), texts, args, tmp)
    except Exception as e:  # a peer that fails is a row too
        return {**row, "status": "failed", "error": first_line(e)}
    return {**row, "status": "ok", "steps_per_s": sps, "sentence_transformers": sentence_transformers.__version__}


def plain_simcse(folder: Path, texts: list[str], batch: int, max_length: int, warmup: int, steps: int, device: str,
                 rate: float, compiled: bool = False) -> dict:
    """Steps/s, tokens/s and MFU (6 N tokens/s over ``rate``) of the plain unsupervised SimCSE loop."""
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, dtype=torch.float32, attn_implementation="sdpa").to(device).train()
    cuda = device.startswith("cuda")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-5, fused=cuda)
    n = non_embedding_params(model)
    if compiled:
        model = torch.compile(model)
    tokens, start = 0, time.perf_counter()
    for step in range(warmup + steps):
        if step == warmup:
            sync(device)
            tokens, start = 0, time.perf_counter()
        part = texts[step * batch : (step + 1) * batch]
        enc = tok(part + part, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        tokens += int(enc["attention_mask"].sum())
        enc = {k: v.to(device, non_blocking=True) for k, v in enc.items()}
        with torch.autocast("cuda" if cuda else "cpu", dtype=torch.bfloat16, enabled=cuda):
            z = model(**enc).last_hidden_state[:, 0]
            a, b = z[:batch].float(), z[batch:].float()
            sims = F.cosine_similarity(a[:, None], b[None], dim=-1) / 0.05
            loss = F.cross_entropy(sims, torch.arange(batch, device=device))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    sync(device)
    dt = time.perf_counter() - start
    return {"name": f"plain loop ({'compiled' if compiled else 'eager'})", "status": "ok", "batch_size": batch,
            "max_length": max_length,
            "steps_per_s": steps / dt, "tokens_per_s": tokens / dt, "mfu": 6 * n * tokens / dt / rate,
            "non_embedding_params": n}


def simcse_peers(folders, args, rate: float, tmp: Path, run_recipe, on_row) -> None:
    """At simcse-unsup's shape (BERT-base, its length; its batch, then ``--simcse-batches``): sentence-transformers'
    trainer (the recipe's batch), the plain loop, embench's recipe at the other batches (``run_recipe``), and
    with ``--compile-peers`` on CUDA both compiled. Each row goes to ``on_row`` as it ends (the caller saves it:
    a time limit keeps the rows that ran)."""

    from embench.data import DataRoot
    from embench.data.training_sets import load
    from embench.train.recipes import RECIPES

    vals = RECIPES.get("simcse-unsup").values
    batches = list(dict.fromkeys([vals["batch_size"], *(int(b) for b in args.simcse_batches.split(",") if b.strip())]))
    length = vals["max_length"]
    texts = load("sentences", ["corpora"], DataRoot.resolve(args.data))[: max(batches) * (args.warmup + args.steps + 2)]
    folder = folders.weights("bert-base")
    compiled = [False] + ([True] if args.compile_peers and args.device.startswith("cuda") else [])
    on_row(st_trainer(folder, texts, vals["batch_size"], length, args.warmup, args.steps, args.device, tmp / "st"))
    for batch in batches:
        for comp in compiled:
            try:
                on_row(plain_simcse(folder, texts, batch, length, args.warmup, args.steps, args.device, rate, comp))
            except Exception as e:  # a peer that fails is a row too
                on_row({"name": f"plain loop ({'compiled' if comp else 'eager'})", "batch_size": batch,
                        "status": "failed", "error": first_line(e)})
            if batch != vals["batch_size"] or comp:  # the recipe's own row is embench eager at its batch
                setting = {**args.set, "batch_size": batch, "compile": comp}
                row = run_recipe(f"simcse-unsup (batch {batch}{', compiled' if comp else ''})", "simcse-unsup", "bert-base",
                                 folders, argparse.Namespace(**{**vars(args), "set": setting}), rate, tmp)
                on_row({**row, "name": f"embench ({'compiled' if comp else 'eager'})", "batch_size": batch})


LORA_PEER_LENGTH = 64  # issue 31's calibration: triplets of 64-token ids, no padding


def plain_lora(folders, shape: str, triplets: int, warmup: int, steps: int, device: str, rate: float,
               vals: dict) -> dict:
    """Steps/s, tokens/s, MFU (6 N tokens/s over ``rate``) and peak memory of the plain LoRA loop of issue 31's
    calibration on ``shape`` (random weights): ``triplets`` x 3 texts of ``LORA_PEER_LENGTH`` random ids (no padding),
    weights in bf16 (fp32 on a CPU), peft's LoRA with the recipe's r, alpha, dropout and targets, gradient checkpointing,
    the last token's state, InfoNCE with hard negatives at the recipe's temperature, fused AdamW, no read of the
    device inside the loop. Its tokens are all real: its MFU compares with a recipe row's ``mfu_padded``, and with
    ``mfu`` where the recipe pads little."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModel

    cuda = device.startswith("cuda")
    row = {"name": f"plain LoRA loop ({shape}, {triplets} triplets x {LORA_PEER_LENGTH} tokens)", "batch_size": triplets,
           "max_length": LORA_PEER_LENGTH}
    model = None
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    try:
        config = folders.hf_config(shape)
        torch.manual_seed(0)
        with torch.device(device):
            model = AutoModel.from_config(config, dtype=torch.bfloat16 if cuda else torch.float32, attn_implementation="sdpa")
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model = get_peft_model(model, LoraConfig(r=vals["lora_r"], lora_alpha=vals["lora_alpha"], lora_dropout=vals["lora_dropout"],
                                                 target_modules="all-linear", bias="none"))
        model.train()
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=vals["lr"], fused=cuda)
        n = non_embedding_params(model)
        ids = torch.randint(1000, config.vocab_size, (3 * triplets, LORA_PEER_LENGTH), device=device)
        labels = torch.arange(triplets, device=device)
        start = time.perf_counter()
        for step in range(warmup + steps):
            if step == warmup:
                sync(device)
                start = time.perf_counter()
            with torch.autocast("cuda" if cuda else "cpu", dtype=torch.bfloat16, enabled=cuda):
                h = model(input_ids=ids, use_cache=False).last_hidden_state[:, -1]
            a, p, hard = F.normalize(h.float(), dim=-1).chunk(3)
            loss = F.cross_entropy(a @ torch.cat([p, hard]).T / vals["temperature"], labels)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        sync(device)
        dt = time.perf_counter() - start
        tokens = 3 * triplets * LORA_PEER_LENGTH * steps
        row.update(status="ok", steps_per_s=steps / dt, s_per_step=dt / steps, tokens_per_s=tokens / dt,
                   tokens_per_step=tokens / steps, non_embedding_params=n, mfu=6 * n * tokens / dt / rate,
                   last_loss=float(loss))
    except Exception as e:  # out of memory included: a peer that fails is a row too
        oom = isinstance(e, torch.OutOfMemoryError) or "out of memory" in str(e).lower()
        row.update(status="out of memory" if oom else "failed", error=first_line(e))
    finally:
        model = None
        row["peak_memory_gib"] = torch.cuda.max_memory_allocated() / 2**30 if cuda else None
        if cuda:
            torch.cuda.empty_cache()
    return row


def lora_peers(folders, args, rate: float, on_row) -> None:
    """The plain LoRA loop beside the bellm recipe, on its paper's shape, at each of ``--lora-peer-batches`` (triplets;
    issue 31's table: 64 and 128)."""
    from embench.train.recipes import RECIPES

    vals = RECIPES.get("bellm").values
    for triplets in (int(b) for b in args.lora_peer_batches.split(",") if b.strip()):
        on_row(plain_lora(folders, "llama-2-7b", triplets, args.llm_warmup, args.llm_steps, args.device, rate, vals))
