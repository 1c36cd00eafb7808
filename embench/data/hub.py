"""An MTEB task's Hugging Face dataset, at the revision mteb pins, copied into ``<root>/mteb/<task>/``.

That folder is where :mod:`embench.tasks.mteb.load` looks for a task's hub dataset (for a task embench
has no reader for, or whose files from the manifest are absent). The revision comes from mteb's task
metadata, so the copy is the data mteb itself would evaluate. ``mirror`` is a local folder holding
``<repo_id>/`` trees (a hub mirror, tests): files are copied from there instead of the network.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..core.atomic import replace_folder, write_json
from ..core.errors import EmbenchError
from ..core.paths import within
from .root import DataRoot

SOURCE_FILE = ".embench-source.json"  # which repository and revision the copy holds


def hub_copy_dir(root: DataRoot, task: str) -> Path:
    return within(root.path / "mteb", task, "MTEB task")


def fetch_hub_dataset(root: DataRoot, task: str, repo_id: str, revision: str | None, mirror: str | Path | None = None) -> Path:
    """Copy ``repo_id`` at ``revision`` into ``<root>/mteb/<task>/``; returns that folder.

    The copy is assembled beside the destination and renamed into place, so a failed fetch leaves
    no half-filled folder behind.
    """
    dest = hub_copy_dir(root, task)
    staging = dest.with_name(dest.name + f".part{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        if mirror is not None:
            src = Path(mirror) / repo_id
            if not src.is_dir():
                raise EmbenchError(f"hub mirror {mirror} has no folder {repo_id} for {task}")
            shutil.copytree(src, staging)
        else:
            try:
                from huggingface_hub import snapshot_download
            except ImportError:
                raise EmbenchError("fetching from the Hugging Face hub needs huggingface_hub: pip install 'embench[mteb]'") from None
            try:
                snapshot_download(repo_id=repo_id, repo_type="dataset", revision=revision, local_dir=staging)
            except Exception as e:  # offline, unknown repository or revision: one clear message
                raise EmbenchError(f"could not fetch the dataset {repo_id}@{revision} for {task} from the Hugging Face hub "
                                   f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None
        write_json(staging / SOURCE_FILE, {"repo_id": repo_id, "revision": revision}, indent=None)
        dest.parent.mkdir(parents=True, exist_ok=True)
        replace_folder(staging, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dest
