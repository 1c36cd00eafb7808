"""An out-of-memory error (CUDA's, or the host's MemoryError) as one message: what ran out, what embench
had already tried, and the options that make the same work fit; never a traceback."""

from __future__ import annotations

from ..core.errors import first_line
from ..core.out_of_memory import is_host_out_of_memory

# what each command can turn down, in the order worth trying
ADVICE = {
    "train": "--grad-accumulation N (the same global batch in N micro-batches), --gradient-checkpointing, "
             "--precision bf16, a smaller --max-length, or --lora-r for decoder LLMs",
    "run": "--batch-tokens (padded tokens per batch; GPU default 65536) or --batch-size, a smaller --max-length, "
           "or --dtype bf16",
    "analyze": "--batch-size, a smaller --max-length, fewer sentences (--set n=...), or --dtype bf16",
    "generate": "--batch-size, a shorter generation (--max-new-tokens), or a smaller model",
}
ADVICE["compare"] = ADVICE["audit"] = ADVICE["mteb"] = ADVICE["grid"] = ADVICE["run"]


def out_of_memory_message(e: BaseException, command: str | None) -> str:
    # torch's CPU allocator says so in a RuntimeError ("can't allocate memory"): the host's, not a GPU's
    where = "the host's memory" if is_host_out_of_memory(e) else "GPU memory"
    first = first_line(e, 240)
    tried = (" embench had already split the batch that failed and tried it again in halves;"
             if command in ("run", "compare", "audit", "mteb", "grid", "analyze") else "")
    fix = ADVICE.get(command or "", ADVICE["run"])
    return f"out of {where} ({first}).{tried} To fit, set {fix}; finished work is kept, run the same command again."
