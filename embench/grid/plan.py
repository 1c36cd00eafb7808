"""From a grid to cells and jobs: each cell keyed by the record key ``embench run`` would store it under,
cells already in the results folder left out, the rest grouped into one job per model.

Only each model's config and weights fingerprint are read here (``load_model`` reads weights on
first use), so a grid of many checkpoints is planned in seconds and a missing model is named
before any job is submitted.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.atomic import write_text
from ..core.errors import EmbenchError
from ..core.hashing import stable_hash
from ..data.root import DataRoot
from ..encoding.cache import default_cache_dir
from ..evaluation.protocols import EvalProtocol
from ..evaluation.results import ResultStore, record_key, slug
from ..evaluation.suites import SUITES
from ..models.loader import load_model
from ..report.progress import RateProgress
from ..tasks import TASKS
from ..tasks.names import resolve_tasks
from ..tasks.recorded_protocol import seeded_protocol, task_protocol
from .spec import GridSpec
from .state import Cell, GridState
from .status import cell_states

# the encoder settings a job pins to what the plan saw, so the job's record keys are the plan's
# (a GPU node would otherwise pick its own default dtype)
PINNED = ("pooling", "layer", "max_length", "dtype", "normalize", "prompt")


@dataclass
class Job:
    """One model's pending cells: the model is loaded, and each text encoded, once for all of them."""

    id: str
    model: str
    model_options: dict[str, Any]
    cells: list[Cell]

    def to_dict(self, spec: GridSpec, results: Path) -> dict[str, Any]:
        return {"id": self.id, "model": self.model, "model_options": self.model_options,
                "cells": [c.to_dict() for c in self.cells], "results": str(results), "data": spec.data,
                "cache_dir": spec.cache_dir, "batch_size": spec.batch_size, "devices": spec.devices}


@dataclass
class Plan:
    cells: list[Cell]
    states: dict[str, dict[str, Any]]  # cell id -> {"state": done|running|failed|missing, ...}
    jobs: list[Job] = field(default_factory=list)
    sbatch: Path | None = None  # the dry run's sbatch file
    submitted: list[Any] = field(default_factory=list)  # submitit jobs

    def count(self, state: str) -> int:
        return sum(1 for s in self.states.values() if s["state"] == state)


def protocol_label(entry: dict[str, Any]) -> str:
    """How a protocol is shown: its name in the protocols file, else the axes it sets."""
    if entry.get("name"):
        return str(entry["name"])
    return ",".join(f"{k}={v}" for k, v in entry.items() if k != "name") or "default"


def make_cells(spec: GridSpec, progress: bool = False) -> tuple[list[Cell], dict[str, dict[str, Any]]]:
    """Every cell of the grid, and each model's pinned encoder settings (model -> options for its job).
    ``progress``: a count of the models read (each one's weights are hashed: seconds for a base-size model)."""
    tasks, _ = resolve_tasks(spec.suite, spec.tasks)
    suite_defaults = SUITES.get(spec.suite).protocol if spec.suite else {}
    given = [(protocol_label(p), {**suite_defaults, **{k: v for k, v in p.items() if k != "name"}}) for p in spec.protocols]
    # each task's protocol as evaluate() records it: an MTEB task's own seed (mteb's 42) where the entry gives none, and
    # the axes a task ignores at their defaults (task_protocol: a cell keyed otherwise was never found done)
    protocols = [(label, {t: task_protocol(TASKS.get(t), seeded_protocol(TASKS.get(t), EvalProtocol.from_options(**g),
                                                                         g.get("seed") is not None)).to_dict()
                          for t in tasks}) for label, g in given]
    cells, pinned = [], {}
    with RateProgress(progress, "planning", "the grid", len(spec.models), "models") as bar:
        for model in spec.models:
            try:
                encoder = load_model(model, **{k: v for k, v in spec.model_options.items() if v is not None})
            except EmbenchError as e:  # a list file's line kept as a hub id: the error names the line
                if model not in spec.origins:
                    raise
                raise EmbenchError(f"{spec.origins[model]}: {e}") from None
            desc = encoder.describe()
            pinned[model] = {**{k: v for k, v in spec.model_options.items() if v is not None},
                             **{k: desc.get(k) for k in PINNED}}
            for label, proto in protocols:
                for task in tasks:
                    cells.append(Cell(model, task, proto[task], record_key(task, desc, proto[task]), label, slug(model)))
            bar.advance()
    return merge_cells(cells), pinned


def merge_cells(cells: list[Cell]) -> list[Cell]:
    """One cell per record: two protocols that differ only in axes a task ignores (STS-B has no aggregation) give one
    record key, so one cell, labelled with both names (``simcse = flow``; " = ", since an unnamed protocol's label
    is ``axis=value``); counted twice, a finished grid looked unfinished and its job ran the cell twice."""
    merged: dict[str, Cell] = {}
    for c in cells:
        first = merged.get(c.id)
        if first is None:
            merged[c.id] = c
        elif c.label not in first.label.split(" = "):
            merged[c.id] = dataclasses.replace(first, label=f"{first.label} = {c.label}")
    return list(merged.values())


def plan(spec: GridSpec, results: Path | str, progress: bool = False) -> Plan:
    """The grid's cells, their states, and one job per model for those neither done nor running."""
    results = Path(results).resolve()  # the markers' log paths and the jobs' results read the same from any cwd
    state = GridState(results)
    state.init()
    spec.data = str(DataRoot.resolve(spec.data).path)  # jobs on other machines read the same root
    spec.cache_dir = str(Path(spec.cache_dir or default_cache_dir()).expanduser().resolve())
    cells, pinned = make_cells(spec, progress)
    name = stable_hash({"spec": spec.to_dict(), "cells": [c.id for c in cells]}, 12)
    state.save_plan(name, {"spec": spec.to_dict(), "cells": [c.to_dict() for c in cells]})
    states = cell_states(cells, ResultStore(results), state)
    jobs: list[Job] = []
    for model in spec.models:
        todo = [c for c in cells if c.model == model and states[c.id]["state"] in ("missing", "failed")]
        if todo:
            jobs.append(Job(f"{todo[0].slug}-{stable_hash([c.id for c in todo], 8)}", model, pinned[model], todo))
    return Plan(cells, states, jobs)


def write_jobs(p: Plan, spec: GridSpec, results: Path) -> list[Path]:
    """One job file per job (what a worker, local or on a cluster node, reads)."""
    state = GridState(results)
    paths = []
    for job in p.jobs:
        path = state.job_path(job.id)
        write_text(path, json.dumps(job.to_dict(spec, results.resolve()), indent=1, default=str) + "\n")
        paths.append(path)
    return paths
