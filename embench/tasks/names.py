"""Suite and task names resolved without importing any task's code or the model stack, so that a
command can reject an unknown name (with the nearest known ones) in well under a second."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..evaluation.suites import SUITES
from . import TASKS


def resolve_tasks(suite: str | None, tasks: Sequence[str] | None) -> tuple[list[str], str]:
    """Canonical task names and the view to show: the suite's tasks, then ``tasks`` not already in it.

    With ``tasks`` and no suite, only those tasks; with neither, ``sts-all``.
    """
    s = SUITES.get(suite or "sts-all") if suite or not tasks else None
    names = list(s.tasks) if s else []
    names += [TASKS.canonical(t) for t in tasks or ()]
    return list(dict.fromkeys(names)), s.view if s else "summary"


def task_kinds(suite: str | None, tasks: Sequence[str] | None) -> dict[str, str]:
    """Each task's kind (``sts``, ``transfer``, ``mteb``) as far as the names tell before any file is read; {} when
    one is not known yet (a task file's task is registered when its file is read; a typo is said then)."""
    from ..core.errors import EmbenchError
    from ..evaluation.suites import MTEB_PREFIX

    try:
        names, _ = resolve_tasks(suite, tasks)
        return {n: "mteb" if n.upper().startswith(MTEB_PREFIX.upper()) else TASKS.get(n).kind for n in names}
    except EmbenchError:
        return {}


def with_task_files(task_files: Sequence[str | Path] | None, tasks: Sequence[str] | None) -> list[str] | None:
    """Register the tasks of ``task_files`` (each file read and checked now); ``tasks`` when given, else those tasks
    (``--task-file`` alone runs its own tasks, after the suite's when there is one)."""
    if not task_files:
        return list(tasks) if tasks else None
    from .task_file import register_task_files

    named = register_task_files(task_files)
    return list(tasks) if tasks else named


def check_names(suite: str | None = None, tasks: Sequence[str] | None = None, pooling: str | None = None) -> None:
    """Raise the registry's error (nearest names) for an unknown suite, task or pooler; nothing else is done."""
    if suite or tasks:
        resolve_tasks(suite, tasks)
    if pooling is not None:
        from ..models.poolers import POOLERS

        POOLERS.get(pooling)


def stored_task_names(names: str | Sequence[str] | None, records: Sequence) -> set[str]:
    """The task names ``names`` ask for among stored ``records``: a registered name or alias (``STS-B``) as ``run``
    takes it, or a name the records carry themselves (a task file's task, which is registered only while its run
    reads the file)."""
    own = {r.task for r in records}
    return {t if t in own else TASKS.canonical(t) for t in ([names] if isinstance(names, str) else names or [])}


def with_task_aliases(comparison: Any) -> Any:
    """``comparison`` (``evaluation.comparison.Comparison``, which knows each row's task and table name) answering to
    each compared task's aliases too, as ``-t`` takes them: ``verdict("STSB")`` is STS-B's row."""
    for task, row in list(comparison.names.items()):
        if task in TASKS:  # a task file's task is registered only while its file is read
            comparison.names.update(dict.fromkeys(TASKS.aliases(task), row))
    return comparison
