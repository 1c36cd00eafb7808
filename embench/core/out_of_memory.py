"""Is this exception an out-of-memory? One test for the CLI's message, the engine's batch split and the trainer's
retry, without torch."""

from __future__ import annotations

# torch's CPU allocator raises a plain RuntimeError ("[enforce fail at alloc_cpu.cpp:127] ... DefaultCPUAllocator:
# can't allocate memory: you tried to allocate N bytes. Error code 12 (Cannot allocate memory)"), not a
# MemoryError: its words are the only sign that the host ran out
HOST_WORDS = ("can't allocate memory", "cannot allocate memory", "not enough memory")


def is_host_out_of_memory(e: BaseException) -> bool:
    """The host's memory ran out: Python's MemoryError or torch's CPU allocator failing (ENOMEM)."""
    text = str(e).lower()[:300]
    return isinstance(e, MemoryError) or any(w in text for w in HOST_WORDS)


def is_out_of_memory(e: BaseException) -> bool:
    """torch's OutOfMemoryError (CUDA, MPS) or the host's memory running out, without importing torch."""
    text = str(e).lower()[:300]  # CUDA, MPS: "out of memory"
    return type(e).__name__ == "OutOfMemoryError" or "out of memory" in text or is_host_out_of_memory(e)
