"""``embench list WHAT``: the entries of one registry, with a description each.

``CATALOGUE`` is the one mapping of list name -> registry (a lazy ``"module:REGISTRY"`` path, so a
list imports only its own registry). A new registry is listed by adding one line here. Entries that
installed packages declare as entry points (``docs/ARCHITECTURE.md``, Plugins) are listed too, with their
package and target, without importing them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ...core.registry import Registry
from ..options import TASK_FILE_HELP
from ..output import emit

# list runs nothing: its --task-file is read and checked, and its tasks listed (the shared text says what the file is)
ListedTaskFileOpt = Annotated[list[Path] | None, typer.Option(
    "--task-file", help=TASK_FILE_HELP + " With `embench list tasks`, its tasks are listed after the built-in ones, "
                                         "with their kind and sizes.")]

CATALOGUE = {
    "tasks": "embench.tasks:TASKS",
    "suites": "embench.evaluation.suites:SUITES",
    "poolers": "embench.models.poolers:POOLERS",
    "models": "embench.models.catalogue:MODELS",
    "analyses": "embench.analysis.registry:ANALYSES",
    "datasets": "embench.analysis.labelled:LABELLED",
    "families": "embench.models.families:FAMILIES",
    "methods": "embench.train.methods:METHODS",
    "recipes": "embench.train.recipes:RECIPES",
    "commands": "embench.cli.commands:COMMANDS",
}
LISTS: Registry[Registry] = Registry("list")
for _name, _path in CATALOGUE.items():
    LISTS.add(_name, _path)


def list_(what: Annotated[str, typer.Argument(help=f"What to list: {', '.join(CATALOGUE)}.")] = "suites",
          task_file: ListedTaskFileOpt = None) -> None:
    """List what is registered: tasks, suites, poolers, model aliases and families, analyses, labelled datasets, training methods and recipes, commands."""
    registry = LISTS.get(what)
    if task_file:  # a user's own tasks, read and checked, listed after the built-in ones with their kind and sizes
        from ...core.errors import EmbenchError
        from ...tasks.task_file import register_task_files

        if LISTS.canonical(what) != "tasks":
            raise EmbenchError("--task-file declares tasks: use it with `embench list tasks`")
        register_task_files(task_file)
    names = registry.names()
    # each entry with the other names it answers to (run -t STS-B), then its description
    shown = {n: n + (f" ({', '.join(a)})" if (a := registry.aliases(n)) else "") for n in names}
    width = max((len(s) for s in shown.values()), default=0) + 2
    emit("\n".join(f"{shown[n]:<{width}}{registry.description(n)}".rstrip() for n in names))
