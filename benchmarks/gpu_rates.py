"""What a GPU benchmark divides by: the device's bf16 matrix-multiply rate measured in the same run, and the
parameter count N of the model FLOPs (2 N a token forward, 6 N forward and backward; Kaplan et al. 2020).

Shared by ``encode_gpu.py`` and ``recipes_gpu.py`` (run as scripts, so imported by file name).
"""

from __future__ import annotations

import math
import time

import torch

NOT_COUNTED = ("embed", "pooler", "lm_head")  # embeddings are a lookup; BERT's pooler and an LM head are not the stack


def matmul_rate(device: str, n: int = 8192, reps: int = 30) -> float:
    """FLOP/s of a bf16 ``n`` x ``n`` x ``n`` matrix product on ``device`` (after three warm-ups); on a CPU a
    1024 cube three times, which only keeps a smoke run's ratios finite."""
    if not device.startswith("cuda"):
        n, reps = 1024, 3
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    sync(device)
    start = time.perf_counter()
    for _ in range(reps):
        a @ b
    sync(device)
    return 2 * n**3 * reps / (time.perf_counter() - start)


def non_embedding_params(model: torch.nn.Module) -> int:
    """Parameters of the transformer layers (and final norm, heads and adapters), trained or frozen: embeddings,
    the LM head and BERT's pooler left out, under any wrapper's prefix (``encoder.``, peft's ``base_model.model.``)."""
    return sum(logical_numel(p) for name, p in model.named_parameters() if not any(part in name for part in NOT_COUNTED))


def logical_numel(p: torch.Tensor) -> int:
    """A weight's element count as the model computes with it: a bitsandbytes 4-bit weight is stored packed (two
    values a byte, ``numel`` half the layer's), its ``quant_state.shape`` the layer's own."""
    state = getattr(p, "quant_state", None)
    return math.prod(state.shape) if state is not None else p.numel()


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def profile_tables(prof) -> str:
    """A finished ``torch.profiler`` run as two tables: operators by their own device time, then by their own host
    time (where a GPU waits on the host shows in the second)."""
    ops = prof.key_averages()
    device = ops.table(sort_by="self_cuda_time_total", row_limit=25, max_name_column_width=60)
    host = ops.table(sort_by="self_cpu_time_total", row_limit=20, max_name_column_width=60)
    return device + "\n" + host

