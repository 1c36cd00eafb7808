"""One batch's forward pass in the engine, halved when it runs out of GPU or host memory.

A batch that does not fit is split in halves (the same vectors: rows do not see each other), the engine's token
budget for later batches is halved, and one warning says which ``--batch-tokens`` to set; a single text that does not
fit is an error naming its length (status 3, as any other out of memory).
"""

from __future__ import annotations

import warnings
from typing import Any

from ..core.errors import EmbenchError
from ..core.out_of_memory import is_host_out_of_memory


class OneTextOutOfMemory(EmbenchError):
    """One text alone does not fit: nothing is left to split."""

    exit_status = 3  # as every out of memory (cli/app.py)


def forward_halving(engine: Any, batch: list[str], views: list, enc: dict) -> list:
    """The pooled vectors of one batch (tensors on the device). A batch that runs out of GPU memory, or of host
    memory (torch's CPU allocator raises a RuntimeError, not a MemoryError), is split in halves (the same vectors:
    rows do not see each other) and the budget of later batches is halved, with one warning that says what to set;
    one text that does not fit is an error naming its length."""
    import torch

    try:
        return (getattr(engine.encoder, "graphs", None) or engine.encoder).encode_views(batch, views, enc, as_tensors=True)  # cuda_graphs.py
    except Exception as e:  # noqa: BLE001  (only an out of memory is handled; anything else goes on up)
        gpu = isinstance(e, torch.cuda.OutOfMemoryError)
        if not (gpu or is_host_out_of_memory(e)):
            raise
        where = "GPU memory" if gpu else "host memory"
    # here, out of the handler, the failed attempt's frames and the tensors they held are gone
    width = int(enc["input_ids"].shape[1])
    if gpu:
        torch.cuda.empty_cache()
    if len(batch) == 1:
        raise OneTextOutOfMemory(f"out of {where} on {engine.encoder.device} encoding one text of {width} tokens "
                                 f"with {engine.encoder.name}: lower --max-length, or use a device with more memory")
    budget = max(1, len(batch) * width // 2)
    if engine.batch_tokens is None or budget < engine.batch_tokens:
        if not engine.stats["oom_splits"]:  # one warning per engine; the stats count every split
            warnings.warn(f"out of {where} at a batch of {len(batch)} texts x {width} tokens: splitting it, and "
                          f"cutting later batches at {budget} tokens or fewer; set --batch-tokens {budget} (or lower) "
                          "to start there", stacklevel=2)
        engine.batch_tokens = budget
    engine.stats["oom_splits"] += 1
    half = len(batch) // 2
    parts = [forward_halving(engine, batch[a:b], views, {k: v[a:b] for k, v in enc.items()}) for a, b in ((0, half), (half, len(batch)))]
    return [torch.cat(pair) for pair in zip(*parts, strict=True)]
