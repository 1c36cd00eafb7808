"""Filling an mteb task object from the data root, and checking it has what mteb's evaluator reads.

Order: embench's builder for the task (:mod:`embench.tasks.mteb.local_data`); else a local copy of
the hub dataset in ``<root>/mteb/<task>/``; else mteb's own ``load_data`` (the hub, where reachable).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...core.errors import MissingDataError
from ...core.paths import within
from ...data.root import DataRoot
from .compare import compare_counts, compare_statistics, published_stats
from .local_data import LOCAL, SchemaError, missing_files


def local_copy(root: DataRoot, task: str) -> Path | None:
    """A user-supplied copy of the hub dataset of ``task``: ``<root>/mteb/<task>/``, if present."""
    folder = within(root.path / "mteb", task, "MTEB task")
    return folder if folder.is_dir() else None


def load_into(mteb_task: Any, root: DataRoot, limit: int | None = None) -> tuple[list[Path], dict[str, Any], list[str]]:
    """Fill ``mteb_task.dataset`` from the data root; returns (files read, meta, texts).

    Order: embench's builder for the task (when its files are all there, or no hub copy is); else a
    local copy of the hub dataset in ``<root>/mteb/<task>/``; else mteb's own ``load_data`` (the hub).
    """
    name = mteb_task.metadata.name
    eval_split = mteb_task.eval_splits[0]
    published = published_stats(mteb_task)
    # embench's files first; a hub copy (`data download --from-hub`) stands in when they are absent
    if name in LOCAL and not (missing_files(root, name) and local_copy(root, name) is not None):
        absent = missing_files(root, name)
        if absent:
            listing = "\n".join(f"  - {p}" for p in absent)
            err = MissingDataError(absent[0], task=f"MTEB:{name}", root=root.path)
            err.args = (f"MTEB:{name} needs {len(absent)} file(s) missing from the data root {root.path}:\n{listing}\n"
                        f"Get them with `embench data download --task MTEB:{name}` (or its Hugging Face dataset with "
                        f"`embench data download --from-hub --task MTEB:{name}`) or point --data / EMBENCH_DATA at a data root "
                        f"that has them (`embench data check` lists what is present).",)
            raise err
        built = LOCAL[name].build(root, limit)
        mteb_task.dataset = built.dataset
        mteb_task.data_loaded = True
        check_schema(mteb_task, built.files)
        differences = list(LOCAL[name].notes) + built.notes + compare_counts(built.counts, published, eval_split)
        if limit is not None:
            differences.insert(0, f"slice: {limit} items spread over the data only")
        else:  # the whole local copy: every statistic mteb ships for the task, computed by mteb on ours
            seen = {d.split(":", 1)[0].replace("_statistics.", " ") for d in differences}
            differences += [d for d in compare_statistics(mteb_task, published, eval_split) if d.split(":", 1)[0] not in seen]
        meta = {"data_source": "embench data root", "local_counts": built.counts, "data_differences": differences}
        return built.files, meta, built.texts
    copy = local_copy(root, name)
    if copy is not None:
        mteb_task.metadata = mteb_task.metadata.model_copy(update={"dataset": {"path": str(copy), "revision": None}})
        source = f"local copy {copy}"
    else:
        source = f"hub {mteb_task.metadata.dataset.get('path')}@{mteb_task.metadata.dataset.get('revision')}"
    try:
        mteb_task.load_data()
    except Exception as e:  # offline, missing repo, unreadable local copy
        where = f"the local copy {copy}" if copy is not None else f"the hub ({source})"
        err = MissingDataError(root.path / "mteb" / name, task=f"MTEB:{name}", root=root.path)
        err.args = (f"MTEB:{name}: embench has no local reader for this task and {where} could not be read "
                    f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}). Put a copy of its hub dataset "
                    f"in {root.path / 'mteb' / name} or allow hub access (HF_HUB_OFFLINE unset).",)
        raise err from e
    if copy is not None:  # mteb's result records a dataset revision; name the copy instead
        mteb_task.metadata = mteb_task.metadata.model_copy(update={"dataset": {"path": str(copy), "revision": "local-copy"}})
    files = sorted(p for p in copy.rglob("*") if p.is_file()) if copy is not None else []
    return files, {"data_source": source, "data_differences": []}, []


REQUIRED_COLUMNS = {
    "sts": lambda t: [*t.column_names, "score"],
    "classification": lambda t: [t.input_column_name, t.label_column_name],
    "clustering": lambda t: [t.input_column_name, t.label_column_name],
    "pair": lambda t: [t.input1_column_name, t.input2_column_name, t.label_column_name],
}


def task_kind(mteb_task: Any) -> str:
    from mteb.abstasks import AbsTaskClassification, AbsTaskPairClassification, AbsTaskRetrieval, AbsTaskSTS

    for cls, kind in ((AbsTaskSTS, "sts"), (AbsTaskClassification, "classification"),
                      (AbsTaskPairClassification, "pair"), (AbsTaskRetrieval, "retrieval")):
        if isinstance(mteb_task, cls):
            return kind
    if "Clustering" in type(mteb_task).__mro__[1].__name__ or mteb_task.metadata.type == "Clustering":
        return "clustering"
    return mteb_task.metadata.type.lower()


def check_schema(mteb_task: Any, files: list[Path]) -> None:
    """The columns mteb's evaluator will read must be in ``task.dataset``; else name the field."""
    kind = task_kind(mteb_task)
    where = ", ".join(str(f) for f in files[:3])
    if kind == "retrieval":
        for split in mteb_task.eval_splits:
            data = mteb_task.dataset["default"][split]
            for part, cols in (("corpus", ("id", "text")), ("queries", ("id", "text"))):
                missing = [c for c in cols if c not in data[part].column_names]
                if missing:
                    raise SchemaError(f"mteb's {mteb_task.metadata.name} needs field {missing[0]!r} in its {part} ({where})")
        return
    need = REQUIRED_COLUMNS.get(kind)
    if need is None:
        return
    cols = [c for c in need(mteb_task) if isinstance(c, str)]
    splits = list(mteb_task.eval_splits) + ([mteb_task.train_split] if kind == "classification" else [])
    for split in splits:
        if split not in mteb_task.dataset:
            raise SchemaError(f"mteb's {mteb_task.metadata.name} needs a {split!r} split; the local data has {sorted(mteb_task.dataset)} ({where})")
        have = mteb_task.dataset[split].column_names
        missing = [c for c in cols if c not in have]
        if missing:
            raise SchemaError(f"mteb's {mteb_task.metadata.name} needs field {missing[0]!r} in split {split!r}; the local data has {have} ({where})")
