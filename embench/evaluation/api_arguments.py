"""The arguments of :func:`embench.evaluate` (and of the functions built on it) checked before the model loads."""

from __future__ import annotations

from typing import Any

from ..core.arguments import callback, folder_argument, name_list, truth, whole_number
from ..core.errors import EmbenchError
from ..encoding.batching import check_batching


def evaluate_arguments(suite: Any, tasks: Any, task_files: Any, batch_size: Any, on_task: Any,
                       folders: dict[str, Any] | None = None,
                       flags: dict[str, Any] | None = None, label: Any = None) -> tuple[list[str] | None, list[str] | None]:
    """``tasks`` and ``task_files`` as lists (one name is a list of one); a suite that is no name, an empty list of
    tasks, a batch size that is no whole number of at least 1, a callback that cannot be called, a folder that is no
    path, a switch that is not True or False or a label that is no name is an error naming it."""
    if label is not None and (not isinstance(label, str) or not label.strip()):  # a number failed deep in the row names
        raise EmbenchError(f"label must be a name (a non-empty string), not {type(label).__name__} {label!r}")
    for what, value in (folders or {}).items():
        folder_argument(value, what)
    for what, value in (flags or {}).items():
        truth(value, what)
    if suite is not None and not isinstance(suite, str):
        hint = "; give a list of tasks as tasks=[...]" if isinstance(suite, list | tuple) else ""
        raise EmbenchError(f"suite must be a suite name such as 'sts-all', not {type(suite).__name__} {suite!r}{hint}")
    tasks, task_files = name_list(tasks, "tasks"), name_list(task_files, "task_files")
    if tasks == [] and not task_files and suite is None:  # not the default suite: the caller asked for no task
        raise EmbenchError("tasks=[] names no task; leave tasks out for the default suite (sts-all)")
    batch_arguments(batch_size)
    callback(on_task, "on_task")
    return tasks, task_files


def batch_arguments(batch_size: Any, batch_tokens: Any = None) -> None:
    """A batch size (and token budget) the engine takes, said before a model loads (``evaluate``, ``compare``, ``audit``):
    the engine said ``batch_size=0`` only once the model had loaded, and in ``audit`` every task had been read."""
    whole_number(batch_size, "batch_size", least=None)  # the name the API spells; its range as --batch-size's
    check_batching(batch_size, batch_tokens)


def interval_arguments(ci: Any, resamples: Any, ci_seed: Any) -> None:
    """``resamples`` and ``ci_seed`` only with ``ci``: without an interval to draw, they were dropped in silence."""
    if ci is None and (resamples is not None or ci_seed is not None):
        raise EmbenchError("--resamples and --ci-seed set how intervals are drawn: give --ci LEVEL (e.g. --ci 95) too")
