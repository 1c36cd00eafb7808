"""Whether this device computes bf16/fp16 natively, and a warning where it does not; which attention
kernels a GPU pass uses (:func:`gpu_attention`).

On a CPU without bf16 (or fp16) instructions (``avx512_bf16``/``amx_bf16``, ``avx512_fp16``/``amx_fp16``)
torch computes those dtypes by converting to and from fp32 around every kernel: measured on a 2-core
AVX2 machine, 256 texts took 8.6 s in fp32 and 53 s in bf16 (about 6x slower), with vectors that only
differ by rounding; on this project's AVX-512 machine (bf16 native, fp16 not) a 512 x 576 x 1536 linear layer
took 10 ms in fp32, 5 ms under bf16 autocast and 49 ms under fp16 autocast. GPUs (and Apple's MPS) compute
both natively.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from pathlib import Path

NATIVE_FLAGS = {"bf16": ("avx512_bf16", "amx_bf16"), "fp16": ("avx512_fp16", "amx_fp16")}


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (Linux ``/proc/cpuinfo``; empty where that cannot be read)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def native_precision(device: str, dtype: str) -> bool:
    """True where ``dtype`` runs at native speed on ``device`` (fp32 always; bf16/fp16 on GPUs, and on CPUs
    with the instructions above). An unknown CPU (flags unreadable) counts as native: no false alarm."""
    if dtype == "fp32" or not device.startswith("cpu"):
        return True
    flags = cpu_flags()
    return not flags or any(f in flags for f in NATIVE_FLAGS.get(dtype, ()))


def warn_if_emulated(device: str, dtype: str, option: str = "--dtype", value: str | None = None) -> bool:
    """Warn (once per calling line, as Python's warnings do) that ``dtype`` is emulated here; returns whether it is.
    ``option value`` is what the user set (``--precision fp16-mixed`` for training), ``option fp32`` the way out."""
    if native_precision(device, dtype):
        return False
    warnings.warn(
        f"{option} {value or dtype} on this CPU has no native {dtype} arithmetic ({' or '.join(NATIVE_FLAGS[dtype])} "
        f"missing): torch emulates it, about 5-6x slower than fp32, with the same results up to rounding. Use "
        f"{option} fp32 unless {dtype} itself is what you measure.",
        stacklevel=3,
    )
    return True


def gpu_attention(device: str) -> contextlib.AbstractContextManager:
    """SDPA without the cuDNN backend on a GPU. cuDNN's attention builds an execution plan for every new
    (batch, length) shape, and a pass over length-sorted batches meets a new shape at almost every batch:
    on an H100, BERT-base over the 26,083 sts-all texts took 3.9 s with cuDNN's attention on first meeting
    the shapes and 0.79 s once they were planned, against 0.68 s with the flash / memory-efficient kernels,
    which need no plan (``reports/benchmarks/encode_gpu.md``)."""
    if not device.startswith("cuda"):
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH])
