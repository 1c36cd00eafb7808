"""Which manifest files a name stands for: a task, a task alias, an analysis dataset or a training set.

``embench data download -t NAME`` and the hint of every missing-file error use these names, so the
files are found by asking each reader which files it reads (a task's ``data_files``, a labelled
set's files, the training sets of :mod:`embench.data.training_sets`), never by a second hand-kept list.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from .analysis.labelled import LABELLED, labelled_files
from .core.errors import EmbenchError, UnknownNameError
from .core.registry import nearest
from .data.manifest import check_files, load_manifest, located, manifest_sums
from .data.root import DataRoot
from .tasks import TASKS

# training sets of embench.data.training_sets, by the keyword --train-data takes -> the folder they live in
TRAINING_SETS = {"corpora": "corpora/", "snli": "senteval/downstream/SNLI/"}


def known_names(manifest: str | Path | None = None) -> list[str]:
    """Every name ``data download -t`` accepts (aliases included)."""
    entries = load_manifest(manifest)
    names = TASKS.names() + LABELLED.names() + list(TRAINING_SETS)
    names += [e.task for e in entries if e.task]
    unique = {n.lower(): n for n in reversed(names)}  # one spelling per name: the first given
    return sorted(unique.values(), key=str.lower)


def _reader_files(name: str, probe: DataRoot) -> list[Path] | None:
    """The files the readers behind ``name`` read, laid out under ``probe`` (None: not a reader's name)."""
    files: list[Path] = []
    found = False
    if name in TASKS:
        files += TASKS.get(name).data_files(probe)
        found = True
    if name in LABELLED:
        files += labelled_files(name, probe)
        found = True
    return files if found else None


def manifest_paths(names: list[str], manifest: str | Path | None = None, skip_hub_only: bool = False) -> set[str]:
    """The manifest paths that the readers behind ``names`` read; an unknown name suggests the nearest.

    An MTEB task embench has no reader for reads only its hub dataset: an error naming ``--from-hub``,
    or nothing with ``skip_hub_only``.
    """
    entries = load_manifest(manifest)
    by_path = {e.path: e for e in entries}
    out: set[str] = set()
    with tempfile.TemporaryDirectory() as empty:  # an empty root: the readers' paths in embench's own layout
        probe = DataRoot(Path(empty).resolve())
        for name in names:
            files = _reader_files(name, probe)
            if files is not None:
                rels = [str(f.relative_to(probe.path)) for f in files]
                if not rels and not skip_hub_only:
                    raise EmbenchError(f"{name} has no files in the manifest: embench reads its Hugging Face dataset "
                                       f"(`embench data download --from-hub -t {name}`)")
                for rel in rels:
                    hit = next((p for p in (rel, rel + ".gz", rel.removesuffix(".gz")) if p in by_path), None)
                    if hit is None:
                        raise EmbenchError(f"{name} reads {rel}, which the manifest does not list")
                    out.add(hit)
                continue
            key = name.lower()
            if key in TRAINING_SETS:
                out |= {e.path for e in entries if e.path.startswith(TRAINING_SETS[key])}
                continue
            grouped = {e.path for e in entries if (e.task or "").lower() == key}
            if not grouped:
                known = known_names(manifest)
                raise UnknownNameError("task or dataset", name, known, nearest(name, known))
            out |= grouped
    return out


def dataset_rows(root: DataRoot, manifest: str | Path | None = None) -> list[dict[str, Any]]:
    """``embench data check`` rows beside the tasks': analysis and training sets, then any manifest group no reader names."""
    sums = manifest_sums(manifest)
    named = [(n, "analysis") for n in LABELLED.names()] + [(n, "training") for n in TRAINING_SETS]
    rows, covered = [], set()
    for name, kind in named:
        paths = sorted(manifest_paths([name], manifest))
        covered |= set(paths)
        rows.append({"task": name, "kind": kind, **check_files(root, [located(root, p) for p in paths], sums, name)})
    covered |= manifest_paths(TASKS.names(), manifest, skip_hub_only=True)
    groups: dict[str, list[str]] = {}
    for e in load_manifest(manifest):
        if e.path not in covered:
            groups.setdefault(e.task or "", []).append(e.path)
    for name, paths in groups.items():
        rows.append({"task": name, "kind": "data", **check_files(root, [located(root, p) for p in paths], sums, name)})
    return rows
