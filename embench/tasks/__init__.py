"""What is measured. Importing this package registers every task and suite of its modules.

Every module of this package is imported, so a new task family registers itself (``TASKS.add``,
``SUITES.add``) without editing this file. Modules must import heavy optional libraries (mteb)
lazily, inside functions.
"""

import importlib
import pkgutil

from .base import TASKS, Prepared, Task, TaskScore

for _mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _mod.name != "base":
        importlib.import_module(f"{__name__}.{_mod.name}")

__all__ = ["TASKS", "Prepared", "Task", "TaskScore"]
