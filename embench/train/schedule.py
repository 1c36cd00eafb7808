"""Optimiser and learning-rate schedule: linear warm-up, then linear decay to zero (or a constant rate).

SimCSE trains with transformers' default schedule (no warm-up, linear decay); the cropping code
uses ``get_linear_schedule_with_warmup`` with warm-up over 10% of ONE epoch's steps
(``warmup_of: epoch``), whatever the number of epochs. The schedules are transformers' (``make_scheduler``).
"""

from __future__ import annotations

import torch

from .config import TrainConfig


def make_optimizer(params: list[torch.nn.Parameter], cfg: TrainConfig) -> torch.optim.Optimizer:
    """Adam or AdamW with the fused kernel where torch has it (CUDA, recent CPU builds), else foreach."""
    cls = {"adamw": torch.optim.AdamW, "adam": torch.optim.Adam}[cfg.optimizer]  # config.OPTIMIZERS, checked by resolve
    try:
        return cls(params, lr=cfg.lr, weight_decay=cfg.weight_decay, fused=True)
    except (RuntimeError, TypeError, ValueError):
        return cls(params, lr=cfg.lr, weight_decay=cfg.weight_decay, foreach=True)


def warmup_steps(cfg: TrainConfig, total: int, per_epoch: int) -> int:
    """``warmup_steps`` when set (never past the run's end), else ``warmup_ratio`` of the run or of one epoch."""
    if cfg.warmup_steps is not None:
        return min(int(cfg.warmup_steps), total)
    span = per_epoch if cfg.warmup_of == "epoch" else total
    return int((cfg.warmup_ratio or 0.0) * span)


def make_scheduler(optimizer: torch.optim.Optimizer, total: int, warmup: int,
                   kind: str = "linear") -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up over ``warmup`` steps, then linear decay to zero at ``total`` (``linear``) or the peak
    rate kept (``constant``: JTCSE's scripts build AdamW and no scheduler).

    transformers' schedules, as every script a recipe cites runs them: the cropping code calls
    ``get_linear_schedule_with_warmup``; SimCSE (``run_*_example.sh``) and BeLLM's ``train.py`` (AnglE's trainer,
    ``--warmup_steps 100``) train through transformers' ``Trainer``, which makes the same one. Step ``s`` of the
    warm-up runs at ``s / warmup`` of the peak (the first at 0), the peak at step ``warmup``. Their formulas, not
    their functions: ``transformers.optimization`` imports peft and bitsandbytes (5 s, and a warning on stderr) into
    every run; tests/test_train.py holds the two equal."""
    def factor(step: int) -> float:
        if step < warmup:
            return step / max(1, warmup)
        if kind == "constant":
            return 1.0
        return max(0.0, (total - step) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
