"""Multi-process training (DDP via ``torchrun``) with in-batch negatives over the global batch.

Each process embeds its share of the batch; :func:`gather_with_grad` concatenates every process's
embeddings and keeps the gradient path back to the process that made them (its backward sums the
incoming gradients over processes and returns this process's slice). Each process's loss is the
mean over its own anchors against the gathered candidates; DDP averages gradients over processes,
so the update equals one process on the concatenated batch (SimCSE gathers across GPUs too, §8 of
its notes). The test ``test_ddp_matches_one_process`` checks this on CPU with gloo.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def init_from_env(device: str | None = None) -> DistInfo:
    """Join the process group that ``torchrun`` describes (RANK, WORLD_SIZE, LOCAL_RANK), if any.

    NCCL on CUDA, gloo on CPU. Without those variables (or WORLD_SIZE=1) nothing happens.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo()
    rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        cuda = torch.cuda.is_available() and (device is None or device.startswith("cuda"))
        if cuda:
            torch.cuda.set_device(local)
        dist.init_process_group("nccl" if cuda else "gloo")
    return DistInfo(rank, world, local)


class _GatherWithGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        world = dist.get_world_size()
        parts = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(parts, x.contiguous())
        ctx.rank, ctx.n = dist.get_rank(), x.shape[0]
        return torch.cat(parts, dim=0)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        # Every process's loss reads every process's rows: sum those gradients, keep our slice.
        grad = grad.contiguous()
        dist.all_reduce(grad, op=dist.ReduceOp.SUM)
        return grad[ctx.rank * ctx.n : (ctx.rank + 1) * ctx.n]


def gather_with_grad(x: torch.Tensor) -> torch.Tensor:
    """All processes' ``x`` concatenated in rank order (equal sizes), differentiable; ``x`` itself
    when not distributed."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return x
    return _GatherWithGrad.apply(x)


def barrier() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def mean_over_processes(value: float) -> float:
    """The mean of a scalar over processes (for logging the global loss)."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return value
    t = torch.tensor([value], dtype=torch.float64)
    if dist.get_backend() == "nccl":
        t = t.cuda()
    dist.all_reduce(t)
    return float(t.item()) / dist.get_world_size()
