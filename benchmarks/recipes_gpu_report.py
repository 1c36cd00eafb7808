"""``recipes_gpu.json`` and ``recipes.md`` of a ``recipes_gpu.py`` run: the markdown is made from the JSON alone."""

from __future__ import annotations

import json
from pathlib import Path


def save(report: dict, out: Path) -> None:
    """Both files, rewritten after each row (a run cut short keeps what it measured)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "recipes_gpu.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    (out / "recipes.md").write_text(markdown(report))


def fmt(value, spec: str = "") -> str:
    if value is None:
        return "—"
    return format(value, spec) if spec else str(value)


def duration(hours: float | None) -> str:
    if hours is None:
        return "—"
    return f"{hours * 60:.1f} min" if hours < 1 else f"{hours:.1f} h"


def fit(row: dict) -> str:
    f = row.get("fit") or {}
    micro = f.get("micro_batches", f.get("grad_accumulation_chosen", f.get("grad_accumulation")))
    ckpt = f.get("gradient_checkpointing_used", f.get("gradient_checkpointing"))
    return f"{fmt(micro)} / {'on' if ckpt else 'off' if ckpt is not None else '—'}"


def summary_line(row: dict) -> str:
    m = row.get("model") or {}
    lora = f"r {row['lora_r']}" if row.get("lora_r") else "—"
    head = (f"| {row['recipe']} | {m.get('shape', '—')} | {fmt(row.get('batch_size'))} x {fmt(row.get('max_length'))} | "
            f"{fmt(row.get('precision'))} | {lora} / {fmt(row.get('load_kbit'))} | {fit(row)} |")
    if row.get("status") != "ok":  # what it got to (an out of memory: its split and peak) and why it stopped
        why = row.get("status", "") + (f": {row['error']}" if row.get("error") else "")
        return f"{head} {why} | — | — | {fmt(row.get('peak_memory_gib'), '.1f')} | — | — |"
    padded = f" ({100 * row['mfu_padded']:.1f} %)" if row.get("mfu_padded") else ""
    return (f"{head} {row['steps_per_s']:.2f} | {row['tokens_per_s']:,.0f} | {100 * row['mfu']:.1f} %{padded} | "
            f"{fmt(row.get('peak_memory_gib'), '.1f')} | {duration(row.get('recipe_hours'))} | "
            f"{duration(row.get('paper_recipe_hours'))} |")


def detail(row: dict) -> list[str]:
    m = row.get("model") or {}
    shape = (f"{m.get('model_type')}: {m.get('num_hidden_layers')} layers x {m.get('hidden_size')}, {m.get('num_attention_heads')} "
             f"heads, FFN {m.get('intermediate_size')}, vocabulary {m.get('vocab_size')}") if m else "—"
    items = [
        ("model", f"{m.get('shape', '—')} ({shape}), random weights"),
        ("non-embedding parameters N", fmt(row.get("non_embedding_params"), ",")),
        ("data", ", ".join(row.get("data") or ["—"]) + (" (stand-in: the recipe names none)" if row.get("data_stand_in") else "")
         + f", {fmt(row.get('examples'), ',')} examples, {fmt(row.get('epochs'))} epoch(s)"),
        ("batch x max length", f"{fmt(row.get('batch_size'))} x {fmt(row.get('max_length'))}"),
        ("precision", fmt(row.get("precision"))),
        ("LoRA r / load_kbit", f"{fmt(row.get('lora_r'))} / {fmt(row.get('load_kbit'))}" + (f" ({row['kbit_note']})" if row.get("kbit_note") else "")),
        ("how the step ran (train_config.json, metrics)", json.dumps(row.get("fit"))),
        ("steps: warm-up + measured", f"{fmt(row.get('warmup'))} + {fmt(row.get('steps'))}"),
        ("steps/s (s/step)", f"{fmt(row.get('steps_per_s'), '.3f')} ({fmt(row.get('s_per_step'), '.3f')})"),
        ("tokens/s (tokens a step)", f"{fmt(row.get('tokens_per_s'), ',.0f')} ({fmt(row.get('tokens_per_step'), ',.0f')})"),
        ("MFU (real tokens)", f"{100 * row['mfu']:.2f} %" if row.get("mfu") is not None else "—"),
        ("MFU with padding (padded tokens a step)", f"{100 * row['mfu_padded']:.2f} % ({row['padded_tokens_per_step']:,.0f})"
         if row.get("mfu_padded") else "—"),
        ("peak GPU memory: measured steps (warm-up, any out-of-memory try included)",
         f"{fmt(row.get('peak_memory_gib'), '.2f')} GiB ({fmt(row.get('warmup_peak_memory_gib'), '.2f')} GiB)"),
        ("allocator retries (blocks freed and taken again at the cap)", fmt(row.get("alloc_retries"))),
        ("whole recipe, this data root", f"{fmt(row.get('recipe_steps'), ',')} steps, {duration(row.get('recipe_hours'))}"),
        ("whole recipe, the paper's data", f"{fmt(row.get('paper_data'))}: {fmt(row.get('paper_recipe_steps'), ',')} steps, "
         f"{duration(row.get('paper_recipe_hours'))}"),
        ("last loss", fmt(row.get("last_loss"), ".4f")),
        ("status", row.get("status", "") + (f": {row['error']}" if row.get("error") else "")),
        ("wall time of the row", f"{fmt(row.get('wall_s'), '.1f')} s"),
    ]
    return [f"## {row['recipe']}", "", "| | |", "|---|---|", *[f"| {k} | {v} |" for k, v in items], ""]


def peer_lines(report: dict) -> list[str]:
    """SimCSE against its references at each batch: embench's rows (the recipe's own, eager and compiled), then
    sentence-transformers' trainer and the plain loops, each with embench's best steps/s at its batch over its own."""
    peers = [p for p in report.get("peers", []) if not is_lora_peer(p)]
    if not peers:
        return []
    recipe = [{**r, "name": "embench, --recipe simcse-unsup"} for r in report["rows"] if r["recipe"] == "simcse-unsup"]
    runs = recipe + [p for p in peers if p["name"].startswith("embench")] + [p for p in peers if not p["name"].startswith("embench")]
    best: dict = {}
    for r in runs:
        if r["name"].startswith("embench") and r.get("status") == "ok":
            best[r.get("batch_size")] = max(best.get(r.get("batch_size"), 0.0), r["steps_per_s"])
    lines = ["## SimCSE (simcse-unsup's shape) against sentence-transformers' trainer and a plain loop", "",
             "| run | batch | status | steps/s | tokens/s | MFU | embench's best at this batch over this |",
             "|---|---:|---|---:|---:|---:|---:|"]
    for p in runs:
        ok, ours = p.get("status") == "ok", best.get(p.get("batch_size"))
        ratio = f"{ours / p['steps_per_s']:.2f}x" if ok and ours else "—"
        mfu = f"{100 * p['mfu']:.1f} %" if p.get("mfu") is not None else "—"
        lines.append(f"| {p['name']} | {fmt(p.get('batch_size'))} | {p['status']}{': ' + p['error'] if p.get('error') else ''} | "
                     f"{fmt(p.get('steps_per_s'), '.2f')} | {fmt(p.get('tokens_per_s'), ',.0f')} | {mfu} | {ratio} |")
    return lines + ["", "sentence-transformers' trainer pools by mean (a plain folder's default) where the recipe reads "
                    "[CLS] and trains an MLP head: the same model work. Its tokens/s is not read.", ""]


def is_lora_peer(row: dict) -> bool:
    return row.get("name", "").startswith("plain LoRA loop")


def lora_peer_lines(report: dict) -> list[str]:
    """The bellm rows against the plain LoRA loop (issue 31's 7B calibration) of the same run: MFU on real tokens and
    on padded ones, beside the loop's (whose tokens are all real)."""
    loops = [p for p in report.get("peers", []) if is_lora_peer(p)]
    ours = [r for r in report["rows"] if r.get("recipe", "").startswith("bellm") and r.get("status") == "ok"]
    if not loops:
        return []
    lines = ["## BeLLM (the 7B shape) against a plain LoRA loop", "",
             "| run | triplets x tokens | status | s/step | tokens/s | MFU (padded) | peak GiB |", "|---|---|---|---:|---:|---:|---:|"]
    for r in ours:
        padded = f" ({100 * r['mfu_padded']:.1f} %)" if r.get("mfu_padded") else ""
        lines.append(f"| embench, --recipe {r['recipe']} | {fmt(r.get('batch_size'))} x ≤{fmt(r.get('max_length'))} | ok | "
                     f"{r['s_per_step']:.2f} | {r['tokens_per_s']:,.0f} | {100 * r['mfu']:.1f} %{padded} | "
                     f"{fmt(r.get('peak_memory_gib'), '.1f')} |")
    for p in loops:
        ok = p.get("status") == "ok"
        why = p.get("status", "") + (f": {p['error']}" if p.get("error") else "")
        mfu = f"{100 * p['mfu']:.1f} %" if ok else "—"
        lines.append(f"| {p['name']} | {fmt(p.get('batch_size'))} x {fmt(p.get('max_length'))} | {why} | "
                     f"{fmt(p.get('s_per_step'), '.2f')} | {fmt(p.get('tokens_per_s'), ',.0f')} | {mfu} | "
                     f"{fmt(p.get('peak_memory_gib'), '.1f')} |")
    return lines + ["", "The plain loop's ids are random and unpadded, so its MFU compares with a recipe row's MFU on "
                    "padded tokens (in brackets), and with its MFU on real tokens as far as the recipe pads little.", ""]


def markdown(report: dict) -> str:
    v = report["versions"]
    tiny = " **Tiny shapes (2 layers x 64): a smoke run, not a measurement.**" if report.get("tiny") else ""
    lines = [
        f"# The training recipes at their papers' shapes on {report['device']}", "",
        f"Written by `benchmarks/recipes_gpu.py` from `recipes_gpu.json`.{tiny} torch {v['torch']}, transformers "
        f"{v['transformers']}, peft {fmt(v.get('peft'))}, sentence-transformers {fmt(v.get('sentence_transformers'))}, "
        f"datasets {fmt(v.get('datasets'))}, bitsandbytes {fmt(v.get('bitsandbytes'))}. bf16 matrix-multiply rate "
        f"measured in the run: {report['matmul_tflops']:.1f} TFLOP/s. Tokenizer: {report['tokenizer']}."
        + (f" Options set for every recipe: {json.dumps(report['set'])}." if report.get("set") else "")
        + (f" GPU memory capped at {report['memory_cap_gib']:g} GiB for the process (the trainer's fitting sees the cap)."
           if report.get("memory_cap_gib") else ""), "",
        "Each recipe runs as `embench train --recipe NAME` would (its batch, length, method, pooling, LoRA, "
        "precision; the trainer's own memory fitting), on random weights of the paper's model, evaluation off. "
        "MFU = 6 N tokens/s over the measured matmul rate, N = non-embedding parameters trained and frozen (under "
        "LoRA: the frozen base's forward, backward through its activations and recomputed forward are 6 N a token); "
        "the whole recipe = its steps (epochs x ceil(examples / batch)) x the measured s/step. MFU counts real tokens; "
        "in brackets, the padded tokens the device computed (each batch padded to its longest text), the measure "
        "comparable with a loop over fixed-length ids.", "",
        *[line for note in report.get("notes", []) for line in (note, "")],
        "| recipe | model | batch x length | precision | LoRA / kbit | micro-batches / checkpointing | steps/s | tokens/s "
        "| MFU | peak GiB | whole recipe (this data root) | whole recipe (paper's data) |",
        "|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|",
        *[summary_line(r) for r in report["rows"]], ""]
    lines += peer_lines(report) + lora_peer_lines(report)
    for row in report["rows"]:
        lines += detail(row) if row.get("model") else [f"## {row['recipe']}", "", row.get("status", ""), ""]
    return "\n".join(lines)
