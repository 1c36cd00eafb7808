"""Python's cyclic garbage collector leaves the objects that existed before an encoding pass alone while it runs.

A process that has imported torch and transformers tracks some 400,000 objects. An encoding pass allocates many small
ones that live on (token id lists, a key and a vector view per text), which sets off a full collection now and then,
and a full collection walks every tracked object. On this project's CPU, with the model's forward taken out
(``benchmarks/engine_host.py``), a full collection of 175-281 ms fell in nearly every pass of sts-all's 26,083 texts,
and the host's pass was 1.11-1.22x faster with the older objects frozen (three runs). An H200 runs a whole BERT-base
pass of those texts in 0.54-0.59 s (``reports/benchmarks/encode_gpu.md``), so such a pause there is a large share of
it, with the GPU idle. ``gc.freeze()`` moves the objects that exist now into a generation that collections skip;
objects made inside the block are still collected as usual (cycles included), and the frozen ones go back to the
oldest generation when the block ends. Nested blocks and threads share one count: the first to enter freezes, the
last to leave unfreezes.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_depth = 0


@contextlib.contextmanager
def older_objects_frozen() -> Iterator[None]:
    """Within the block, garbage collections walk only the objects made since it began."""
    global _depth
    with _lock:
        _depth += 1
        if _depth == 1:
            gc.freeze()
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.unfreeze()
