"""Multi-process training (DDP via ``torchrun``, or Slurm tasks started by ``srun``) with in-batch
negatives over the global batch.

Each process embeds its share of the batch; :func:`gather_with_grad` concatenates every process's
embeddings and keeps the gradient path back to the process that made them (its backward sums the
incoming gradients over processes and returns this process's slice). Each process's loss is the
mean over its own anchors against the gathered candidates; DDP averages gradients over processes,
so the update equals one process on the concatenated batch (SimCSE gathers across GPUs too, §8 of
its notes). The test ``test_ddp_matches_one_process`` checks this on CPU with gloo.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.distributed as dist

from ..core.errors import EmbenchError


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


def first_host(nodelist: str) -> str:
    """The first host of a Slurm host list (``node[01-04,07],gpu5`` -> ``node01``): the rank-0 task's node, since
    Slurm places tasks in node order. Only the first is needed, so no list is expanded."""
    group = re.match(r"(?:[^,\[]|\[[^\]]*\])+", nodelist.strip())  # up to the first comma outside brackets
    if group is None:
        raise ValueError(f"not a Slurm host list: {nodelist!r}")
    return re.sub(r"\[([^\]]*)\]", lambda m: re.split(r"[,-]", m.group(1))[0], group.group(0))


def slurm_port(job_id: str | int, step_id: str | int = 0) -> int:
    """The rendezvous port of a job step: the same in every task of the step (nothing to agree on), different
    for steps of one job and for nearby jobs; ``MASTER_PORT`` overrides it where this one is taken."""
    return 20000 + (int(job_id) * 16 + int(step_id) % 16) % 40000


def torch_env_from_slurm(environ: Mapping[str, str]) -> dict[str, str]:
    """torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) for a task that ``srun``
    started, read from Slurm's (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, the node list, the job id); empty when
    torchrun's are already there, outside a job step (a batch script itself is no step: ``sbatch --ntasks 2``
    running ``embench train`` without srun is one process), or for a step of one task.
    """
    if "WORLD_SIZE" in environ or "SLURM_STEP_ID" not in environ or "SLURM_PROCID" not in environ:
        return {}
    world = environ.get("SLURM_STEP_NUM_TASKS") or environ.get("SLURM_NTASKS") or "1"
    if int(world) <= 1:
        return {}
    nodes = environ.get("SLURM_STEP_NODELIST") or environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST")
    if not nodes:
        raise EmbenchError("a Slurm job step of several tasks without SLURM_STEP_NODELIST, SLURM_JOB_NODELIST or "
                           "SLURM_NODELIST: cannot tell where rank 0 listens (set MASTER_ADDR and MASTER_PORT)")
    job = environ.get("SLURM_JOB_ID") or environ.get("SLURM_JOBID") or "0"
    return {"RANK": environ["SLURM_PROCID"], "WORLD_SIZE": world, "LOCAL_RANK": environ.get("SLURM_LOCALID", "0"),
            "MASTER_ADDR": environ.get("MASTER_ADDR") or first_host(nodes),
            "MASTER_PORT": environ.get("MASTER_PORT") or str(slurm_port(job, environ["SLURM_STEP_ID"]))}


def init_from_env(device: str | None = None) -> DistInfo:
    """Join the process group that ``torchrun`` (RANK, WORLD_SIZE, LOCAL_RANK) or ``srun --ntasks N`` (Slurm's
    variables, written into the environment as torchrun's) describes, if any.

    NCCL on CUDA, gloo on CPU. Without those variables (or a world of one) nothing happens.
    """
    os.environ.update(torch_env_from_slurm(os.environ))  # the CLI's rank-0 check and the env:// rendezvous read them
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


def broadcast_ints(values: list[int]) -> list[int]:
    """The main process's ``values`` on every process (a choice one process makes for all); as given when alone."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return list(values)
    t = torch.tensor(values, dtype=torch.int64)
    if dist.get_backend() == "nccl":
        t = t.cuda()
    dist.broadcast(t, src=0)
    return [int(v) for v in t.tolist()]
