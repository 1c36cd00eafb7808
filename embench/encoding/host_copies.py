"""Pooled vectors leave the device in large chunks, one chunk behind the forward passes.

Copying each batch's vectors to the host on its own makes the host wait for the GPU after every batch:
the GPU then idles while the host pads and tokenises the next one. Here the vectors of many batches
stay on the device until ``chunk`` texts have gathered; they then go to pinned host memory in one
asynchronous copy per view, and the host reads a chunk only after it has queued the next chunk's
batches, so the GPU always has work queued. On a CPU the "copy" is the tensor itself.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

Landed = Callable[[np.ndarray, list[np.ndarray]], None]  # (row indices, one float32 array per view)


class HostCopies:
    """Gathers ``(indices, [vectors per view])`` batch by batch and hands each chunk to ``landed`` on the host."""

    def __init__(self, landed: Landed, chunk: int):
        self.landed = landed
        self.chunk = chunk
        self._pending: list[tuple[np.ndarray, list[torch.Tensor]]] = []
        self._count = 0
        self._in_flight: tuple[np.ndarray, list[torch.Tensor], torch.cuda.Event | None] | None = None

    def add(self, idx: np.ndarray, vectors: list[torch.Tensor]) -> None:
        self._pending.append((idx, vectors))
        self._count += len(idx)
        if self._count >= self.chunk:
            self._ship()

    def close(self) -> None:
        """Ship what is gathered and wait for every copy: all vectors have then been handed over."""
        if self._pending:
            self._ship()
        self._land()

    def _ship(self) -> None:
        idx = np.concatenate([i for i, _ in self._pending])
        views = [torch.cat([v[k] for _, v in self._pending]) for k in range(len(self._pending[0][1]))]
        self._pending, self._count = [], 0
        event = None
        if views[0].is_cuda:
            host = [torch.empty(v.shape, dtype=v.dtype, pin_memory=True) for v in views]
            for h, v in zip(host, views, strict=True):
                h.copy_(v, non_blocking=True)
            event = torch.cuda.Event()
            event.record()
            views = host
        self._land()  # the chunk before this one: its copy was queued before this chunk's batches ran
        self._in_flight = (idx, views, event)

    def _land(self) -> None:
        if self._in_flight is None:
            return
        idx, views, event = self._in_flight
        self._in_flight = None
        if event is not None:
            event.synchronize()
            arrays = [v.numpy().copy() for v in views]  # pageable copies: pinned memory goes back to torch's cache
        else:
            arrays = [v.numpy() for v in views]
        self.landed(idx, arrays)
