"""What every task shares: a declaration that prepares texts and a scorer that never sees a model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..core.plugins import instance_of
from ..core.registry import Registry
from ..data.root import DataRoot
from ..evaluation.items import Items
from ..evaluation.protocols import EvalProtocol

Embed = Callable[[list[str]], np.ndarray]


@dataclass
class TaskScore:
    """A task's outcome: the main score (what tables show) plus everything else it measured."""

    main: float
    scores: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)
    items: Items | None = None  # the per-item outcomes, for intervals and paired tests


@dataclass
class Prepared:
    """A task with its data read for one protocol: the texts it needs and how to score them."""

    texts: list[str]
    files: list[Path]
    score: Callable[[Embed], TaskScore]
    meta: dict[str, Any] = field(default_factory=dict)


@runtime_checkable  # so that a plug-in task is checked for these members when it is loaded
class Task(Protocol):
    name: str  # canonical name, used in result files
    display: str  # column header in tables
    kind: str  # "sts", "transfer", "mteb"

    def prepare(self, root: DataRoot, protocol: EvalProtocol) -> Prepared: ...

    def data_files(self, root: DataRoot) -> list[Path]:
        """Every file the task can read, under any protocol (for ``embench data check``)."""
        ...


TASKS: Registry[Task] = Registry("task", plugins="embench.tasks", expects=instance_of(
    "embench.tasks.base:Task", "a task object with name, display, kind, prepare() and data_files() (embench.tasks.base.Task)"))


class RowTask:
    """A task declared by a row of data (``self.data``): its name and column header come from the row."""

    data: Any

    @property
    def name(self) -> str:
        return self.data.name

    @property
    def display(self) -> str:
        return self.data.display or self.data.name

    @property
    def description(self) -> str:
        return self.data.description
