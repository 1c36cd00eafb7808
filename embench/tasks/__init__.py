"""What is measured. Importing this package registers every task."""

from . import sts  # noqa: F401  (registers the STS tasks)
from .base import TASKS, Prepared, Task, TaskScore

__all__ = ["TASKS", "Prepared", "Task", "TaskScore"]
