"""The protocol a task runs under and the one its record names: the one asked, with the task's own seed where no seed
was given (mteb's 42 for an MTEB task), and the task's own reading of it where the task ignores some axes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from typing import Any

from ..core.code_identity import outside_code
from ..evaluation.protocols import EvalProtocol
from ..evaluation.task_data import TASK_DATA


def seeded_protocol(task: Any, protocol: EvalProtocol, seed_given: bool) -> EvalProtocol:
    """The protocol ``task`` runs under: ``protocol``, whose seed, when none was given (``seed_given`` False: the CLI's
    unset ``--seed`` and the API's absent ``seed`` reach :class:`EvalProtocol` as its default, 1111), is the task's own
    where it has one (``default_seed``: mteb's 42), so that a record names the seed its task ran with and an explicit
    ``--seed 1111`` runs as 1111."""
    own = getattr(task, "default_seed", None)
    return protocol if seed_given or own is None else replace(protocol, seed=own)


TASK_KEYS = (TASK_DATA, "task_code")  # what a task adds to its records' protocol: no option of a run (grid/worker.py)


@dataclass(frozen=True)
class TaskKeyedProtocol(EvalProtocol):
    """A protocol with what the task itself adds to its records' key (``to_dict``, which the key hashes): ``task_data``,
    the digest of a task file's files (evaluation/task_data.py: two task files of one name over other data keep a
    record each), and ``task_code``, the origin and code of a task from outside embench (a plug-in task whose code
    changed was served its old record). Unset, each is left out: every other task's record keeps its key."""

    task_data: str = ""
    task_code: str = ""

    def to_dict(self) -> dict[str, str | int]:
        return {k: v for k, v in super().to_dict().items() if k not in TASK_KEYS or v}


def keyed(protocol: EvalProtocol, **task_keys: str) -> EvalProtocol:
    """``protocol`` with ``task_keys`` (``task_data``, ``task_code``) added to what it already carries."""
    given = {f.name: getattr(protocol, f.name) for f in fields(protocol)}
    return TaskKeyedProtocol(**{**given, **task_keys})


def task_protocol(task: Any, protocol: EvalProtocol) -> EvalProtocol:
    """An mteb task's record names only what mteb reads (``recorded_protocol``); every other task's, the protocol asked;
    a task from outside embench (a plug-in, ``TASKS.add``) adds its origin and code (``task_code``)."""
    from .base import TASKS

    own = getattr(task, "recorded_protocol", None)
    recorded = own(protocol) if own is not None else protocol
    name = getattr(task, "name", None)
    plugin = TASKS.plugin(name) if isinstance(name, str) and name in TASKS else None
    code = outside_code(task, plugin)
    return keyed(recorded, task_code=code) if code else recorded


def with_defaults(protocol: EvalProtocol, kept: Iterable[str]) -> EvalProtocol:
    """``protocol`` with every axis but ``kept`` at its default: the protocol the record of a task that reads only the
    ``kept`` axes names (one record however the others were set: `--sick-split full` re-keyed STS13 and MRPC alike)."""
    kept, default = set(kept), EvalProtocol()
    return replace(protocol, **{f.name: getattr(default, f.name) for f in fields(EvalProtocol) if f.name not in kept})
