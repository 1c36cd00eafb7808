"""``embench.results``: the stored records, filtered as ``results show`` filters them. Apart from :mod:`embench.api`,
which imports the engine and the model loaders (torch: seconds and hundreds of MB), as listing records needs none."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..core.arguments import name_list
from ..core.boundary import python_api
from ..core.errors import EmbenchError
from ..core.paths import not_there
from ..evaluation.results import Record, ResultStore
from .names import stored_task_names


@python_api("results")
def results(results_dir: str | Path | None = None, model: str | Sequence[str] | None = None,
            task: str | Sequence[str] | None = None) -> list[Record]:
    """Stored records, optionally filtered by model (a substring of its name; several: any of them) and task
    (a name or alias such as ``STS-B``, as ``run`` takes them, or a task file's stored name; several: any of them)."""
    if results_dir is not None and not Path(results_dir).is_dir():  # not an empty answer: a mistyped folder
        raise EmbenchError(f"results folder {results_dir} {not_there(results_dir, 'folder')}")
    models = name_list(model, "model") or []
    tasks = stored_task_names(name_list(task, "task"), stored := ResultStore(results_dir).records())
    return [r for r in stored
            if (not models or any(m.lower() in r.model.lower() for m in models)) and (not tasks or r.task in tasks)]
