"""Where a grid keeps its own files, beside the records in the results folder, and the cell markers.

``<results>/.grid/`` holds:

* ``FORMAT``: the grid format and the embench version that wrote it (a folder from another format
  is refused with both versions named, never misread);
* ``plans/<hash>.json``: each grid submitted into this folder, with its cells and their record keys
  (``embench grid status`` reads these and loads no model);
* ``jobs/<job>.json``: what one job does (a model, its cells, the data root, the cache);
* ``logs/<job>.log``: the local executor's log of each job (Slurm jobs log under ``slurm/``);
* ``cells/<model>/<task>-<key>.json``: a marker per cell that is running or has failed.

A cell is *done* when its record is in the results folder: the records are the truth, the markers
only say what happened to the others. Every file here sits at least three levels deep, so the
result store's ``*/*.json`` never takes one for a record. All writes are atomic (temporary name,
then rename), so many jobs on many machines may write here at once.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..core.atomic import write_text
from ..core.errors import EmbenchError
from ..core.paths import plain_name
from ..core.version import __version__
from ..evaluation.results import slug

GRID_FORMAT = 1
STATE = ".grid"


@dataclass(frozen=True)
class Cell:
    """One (model, task, protocol): a record key once its model's configuration is known."""

    model: str
    task: str
    protocol: dict[str, Any]  # the full protocol (every axis), as the record stores it
    key: str
    label: str = "default"  # the protocol as the user named it, or its non-default axes
    # the model's record folder as slug() gave it when the grid was planned: slug() reads the model path against the
    # cwd, so `grid status` from another folder (or after the model folder moved) would look elsewhere. A plan from
    # before this field has none, and falls back to slug() now.
    folder: str = ""

    @property
    def slug(self) -> str:
        return self.folder or slug(self.model)

    @property
    def id(self) -> str:
        return f"{self.slug}/{self.task}-{self.key}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Cell:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from ``path``, or None when it is missing or not whole (a marker is advice, not truth)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return raw if isinstance(raw, dict) else None


class GridState:
    """The ``.grid`` folder of one results folder."""

    def __init__(self, results: Path | str):
        self.results = Path(results)
        self.root = self.results / STATE

    # -- format ----------------------------------------------------------------------------------
    def check_format(self) -> None:
        """A grid folder written in another format is refused with both versions named."""
        f = self.root / "FORMAT"
        if not f.is_file():
            return
        fields = dict(line.split(" ", 1) for line in f.read_text(encoding="utf-8").splitlines() if " " in line)
        found = fields.get("grid-format", "?")
        if found != str(GRID_FORMAT):
            raise EmbenchError(
                f"{self.root} was written by embench {fields.get('embench', '?')} in grid format {found}; this is "
                f"embench {__version__} (grid format {GRID_FORMAT}). Its records are still read by `embench results "
                f"show`; to run a grid here, move {self.root} aside (its records stay and are reused)"
            )

    def init(self) -> None:
        self.check_format()
        if not (self.root / "FORMAT").is_file():
            write_text(self.root / "FORMAT", f"grid-format {GRID_FORMAT}\nembench {__version__}\n")

    # -- plans and jobs --------------------------------------------------------------------------
    def save_plan(self, name: str, plan: dict[str, Any]) -> Path:
        path = self.root / "plans" / plain_name(f"{name}.json", "grid plan")
        write_text(path, json.dumps(plan, indent=1, default=str) + "\n")
        return path

    def plans(self) -> list[dict[str, Any]]:
        folder = self.root / "plans"
        found = [read_json(p) for p in sorted(folder.glob("*.json"), key=os.path.getmtime)] if folder.is_dir() else []
        return [p for p in found if p is not None]

    def job_path(self, job: str) -> Path:
        return self.root / "jobs" / plain_name(f"{job}.json", "grid job")

    def log_path(self, job: str) -> Path:
        return self.root / "logs" / plain_name(f"{job}.log", "grid job log")

    # -- cell markers ----------------------------------------------------------------------------
    def marker_path(self, cell: Cell) -> Path:
        return self.root / "cells" / cell.slug / plain_name(f"{cell.task}-{cell.key}.json", "grid cell")

    def mark(self, cell: Cell, state: str, **info: Any) -> None:
        write_text(self.marker_path(cell), json.dumps({
            "state": state, "host": socket.gethostname(), "pid": os.getpid(), "time": time.time(), **info,
        }, default=str) + "\n")

    def clear(self, cell: Cell) -> None:
        self.marker_path(cell).unlink(missing_ok=True)

    def marker(self, cell: Cell) -> dict[str, Any] | None:
        return read_json(self.marker_path(cell))
