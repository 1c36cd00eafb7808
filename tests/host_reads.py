"""The aten calls that read tensor values back to the host, counted on any device.

On a GPU each such call makes the host wait for every kernel queued before it: the device then idles while the host
queues what comes next. A CPU has no queue, so the wait cannot be timed there, but the calls are the same: they are
caught here under a ``TorchDispatchMode`` with the Python frames that made them. What is counted: ``item()``,
``float()``, ``int()`` and ``bool()`` of a tensor (``_local_scalar_dense``, ``is_nonzero``), ``nonzero`` and
``masked_select`` (their output's size is a value), ``equal``, ``unique``, and indexing by a boolean mask (which counts
the mask's cells). ``tolist()``, ``numpy()`` and ``cpu()`` of a CPU tensor are not aten calls and are not seen; on a
GPU they are copies to the host, which a CPU run cannot tell from no copy.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode

VALUE_READS = {"_local_scalar_dense", "is_nonzero", "nonzero", "masked_select", "equal", "_unique2", "unique_dim",
               "unique_consecutive", "bincount"}
INDEXING = {"index", "index_put", "index_put_", "_index_put_impl_"}


@dataclass
class Read:
    op: str
    frames: list[str]  # "file.py:line" of the Python frames under the call, innermost last

    def made_in(self, file_name: str) -> bool:
        return any(f.startswith(file_name + ":") for f in self.frames)


def _by_boolean_mask(args: tuple) -> bool:
    indices = args[1] if len(args) > 1 else ()
    return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in (indices or ()))


@dataclass
class HostReads(TorchDispatchMode):
    """``with HostReads() as reads: ...``; then ``reads.calls``, one :class:`Read` per value read back."""

    calls: list[Read] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.__name__.split(".")[0]
        if name in VALUE_READS or (name in INDEXING and _by_boolean_mask(args)):
            frames = [f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno}" for f in traceback.extract_stack()[:-1]
                      if "/torch/" not in f.filename or "/torch/nn/" in f.filename]
            self.calls.append(Read(name, frames))
        return func(*args, **(kwargs or {}))
