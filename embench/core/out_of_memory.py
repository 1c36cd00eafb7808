"""Is this exception an out-of-memory? One test for the CLI's message and the trainer's retry, without torch."""

from __future__ import annotations


def is_out_of_memory(e: BaseException) -> bool:
    """torch's OutOfMemoryError (CUDA, MPS) or the host's MemoryError, without importing torch."""
    text = str(e).lower()[:300]  # CUDA: "out of memory"; the CPU allocator: "not enough memory"
    return (isinstance(e, MemoryError) or type(e).__name__ == "OutOfMemoryError"
            or "out of memory" in text or "not enough memory" in text)
