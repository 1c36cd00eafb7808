"""Evaluation grids: models x tasks x protocols, each cell a record of the results folder, run by an
existing job engine (processes here, Slurm through submitit), never by a scheduler of embench's own.

>>> from embench.grid import GridSpec, run_grid, grid_status          # doctest: +SKIP
>>> spec = GridSpec(models=["ckpt/step-*"], tasks=["STSBenchmark"], protocols=[{}, {"correlation": "pearson"}])
>>> run_grid(spec, "results", executor="local", workers=2)            # doctest: +SKIP
>>> grid_status("results")                                            # doctest: +SKIP

A cell is keyed by the record key ``embench run`` stores it under, so cells already in the folder
(from a grid, a run, an earlier embench whose records check out) are skipped, and a re-run after a
crash, a kill or a preemption does only the failed and missing cells.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Looked up on first use: `embench grid status` reads markers and records and must not import torch.
_LAZY = {
    "GridSpec": "spec", "expand_models": "spec", "read_protocols": "spec", "Cell": "state",
    "Plan": "plan", "run_grid": "run", "grid_status": "status", "status_frame": "status", "summary": "status",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_LAZY)
