"""Your own data as a task: ``--task-file my_task.yaml`` (or ``.toml``; ``task_files=`` in Python).

A task file (:mod:`.declaration`) names a pair-scoring or classification dataset in local files; its task
is registered under its name with the built-in ones, so ``-t NAME``, every protocol option, the stored
records (with each file's sha256 in their provenance), ``compare`` and ``embench list tasks`` treat it
as they treat them. A name a built-in task (or an installed plug-in) holds is refused; registering a task
file again replaces the task it registered before (an edited file is read anew). A command registers them for
its process; ``evaluate(task_files=...)`` only for the call (:func:`task_files_registered`): a later call
without the file must not find its task, as a fresh process would not.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ...core.errors import EmbenchError
from ...core.paths import resolved
from ..base import TASKS
from .declaration import Declaration, read_declaration
from .tasks import ClassificationTask, FileTask, PairsTask, stamp

REGISTERED: dict[str, FileTask] = {}  # lower-cased name -> the task-file task registered under it


def _unchanged(task: FileTask) -> bool:
    try:
        return stamp(task.decl.path) == task.stamp and all(
            task._read.get(s, (None,))[0] == stamp(p) for s, p in task.decl.files.items())
    except OSError:
        return False


def load_task_file(path: str | Path) -> FileTask:
    """The task a task file declares, with every split read and checked (a bad row names its file and line)."""
    real = resolved(Path(path).expanduser())
    known = next((t for t in REGISTERED.values() if t.decl.path == real), None)
    if known is not None and _unchanged(known):  # the same file, as it was: not read again (the CLI then the API)
        return known
    task = FileTask.load(real)
    key, at = task.name.lower(), f"{task.decl.path}{f':{task.decl.name_line}' if task.decl.name_line else ''}: name"
    if key in TASKS and key not in REGISTERED:
        raise EmbenchError(f"{at}: {task.name!r} is taken by the task {TASKS.canonical(task.name)!r}; "
                           "give the task file another name")
    if key in REGISTERED and REGISTERED[key].name != task.name:
        raise EmbenchError(f"{at}: {task.name!r} is registered in this process as "
                           f"{REGISTERED[key].name!r}; keep that spelling")
    task.sizes()  # reads every split: a bad row stops the run here, before any model loads
    return task


def register_task_files(paths: Iterable[str | Path]) -> list[str]:
    """Register the task of each task file under its name (read and checked now); their names, in order."""
    tasks = [load_task_file(p) for p in paths]
    seen: dict[str, FileTask] = {}
    for t in tasks:
        other = seen.setdefault(t.name.lower(), t)
        if other.decl.path != t.decl.path:
            raise EmbenchError(f"{t.decl.path}: task name {t.name!r} is also declared by {other.decl.path}")
    for t in tasks:
        TASKS.add(t.name, t, description=t.description)
        REGISTERED[t.name.lower()] = t
    return list(dict.fromkeys(t.name for t in tasks))


@contextmanager
def task_files_registered(paths: Iterable[str | Path]) -> Iterator[list[str]]:
    """The task files' tasks registered (:func:`register_task_files`) while the block runs, their names given; a name
    that was registered before (by the command line around an ``evaluate``) is registered after it as it was before,
    though the block's file (another one, under the same name) replaced it while the block ran."""
    before = {key: (task, TASKS.get(key), TASKS.aliases(key)) for key, task in REGISTERED.items() if key in TASKS}
    names = register_task_files(paths)
    try:
        yield names
    finally:
        for name in names:
            _unregister(name)
            if name.lower() in before:
                task, item, aliases = before[name.lower()]
                TASKS.add(task.name, item, *aliases, description=task.description)  # as register_task_files added it
                REGISTERED[name.lower()] = task


def _unregister(name: str) -> None:
    REGISTERED.pop(name.lower(), None)
    TASKS.remove(name)  # register_task_files added it under this very name


__all__ = ["REGISTERED", "ClassificationTask", "Declaration", "FileTask", "PairsTask", "load_task_file",
           "read_declaration", "register_task_files", "task_files_registered"]
