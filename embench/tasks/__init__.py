"""What is measured: every task, registered by name from its family's table of declarations.

Each family declares its tasks as rows of plain data (``sts.datasets``, ``senteval.datasets``, the
mteb-lite names of :mod:`embench.evaluation.suites`); the registry holds a lazy
``"module:TABLE.name"`` entry per row, so naming, listing and did-you-mean import no reader, scorer,
torch or mteb. A new family adds its rows and one loop here.
"""

from ..evaluation.suites import MTEB_LITE, MTEB_PREFIX
from .base import TASKS, Prepared, Task, TaskScore
from .senteval.datasets import TRANSFER_DATASETS
from .sts.datasets import STS_DATASETS

for _row in STS_DATASETS:
    TASKS.add(_row.name, f"embench.tasks.sts.reader:STS_TASKS.{_row.name}", *_row.aliases, description=_row.description)
for _row in TRANSFER_DATASETS:
    TASKS.add(_row.name, f"embench.tasks.senteval.transfer:TRANSFER_TASKS.{_row.name}", *_row.aliases,
              description=_row.description)
for _name in MTEB_LITE:
    TASKS.add(MTEB_PREFIX + _name, f"embench.tasks.mteb.tasks:MTEB_TASKS.{_name}", description=f"mteb: {_name}, mteb's evaluator")


def _resolve_mteb(name: str) -> str | None:
    """Any other ``MTEB:<name>`` is registered on first use (reading mteb's task list then)."""
    if not name.upper().startswith(MTEB_PREFIX.upper()):
        return None
    from .mteb.tasks import resolve

    return resolve(name)


TASKS.add_resolver(_resolve_mteb)

__all__ = ["TASKS", "Prepared", "Task", "TaskScore"]
