"""Where a model name points: an alias, a local folder or ``.gguf`` file, embench's model folder, or a hub id.

Each place tried is recorded, so that a name that resolves nowhere gives an error listing them all.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..core.errors import EmbenchError, first_line
from .aliases import ALIASES, HUB_IDS
from .local_models import find_local_model

COMMIT = re.compile(r"[0-9a-f]{40}")  # a full commit hash, as the hub's cache names snapshots
SHORT_COMMIT = re.compile(r"[0-9a-f]{7,39}")  # its first characters, as git and `embench list models` print it


def resolve_model_path(name: str, revision: str | None = None) -> tuple[Path | None, list[str], str]:
    """(local folder or None, what was tried, hub id to try): an alias, a path, then embench's model folder
    (``$EMBENCH_MODELS``, default ``~/.cache/embench/models``: :mod:`embench.models.local_models`). A
    ``revision`` names a hub commit, branch or tag: an alias or a fetched copy is then read from the hub at it
    (a local copy's revision is unknown), and a local folder is an error."""
    tried: list[str] = []
    if revision is not None:
        if Path(name).expanduser().exists():
            raise EmbenchError(f"--revision {revision!r} names a hub revision; {name!r} is a local folder or file, "
                               "which has none (give a hub id, or leave --revision out)")
        hub_id = HUB_IDS.get(ALIASES.canonical(name), name) if name in ALIASES else name
        tried.append(f"local copies of {name!r}: not used, --revision {revision!r} asks for the hub's")
        return None, tried, hub_id
    if name in ALIASES:
        try:
            return ALIASES.get(name)(), tried, name
        except FileNotFoundError as e:
            tried.append(f"alias {name!r}: {e}")
        fetched = find_local_model(ALIASES.canonical(name), tried)
        return fetched, tried, HUB_IDS.get(ALIASES.canonical(name), name)
    tried.append(f"alias: {name!r} is not one of the installed ones ({', '.join(ALIASES.names())}; "
                 "`embench list models` lists the catalogue)")
    p = Path(name).expanduser()
    if p.is_dir():
        return p.resolve(), tried, name
    if p.is_file() and p.suffix == ".gguf":
        return p.resolve().parent, tried, name
    tried.append(f"local folder {str(p)!r}: " + ("is a file, not a model folder or a .gguf file" if p.exists() else "does not exist"))
    return find_local_model(name, tried), tried, name


def check_local_path(name: object) -> None:
    """A model named by a path (``/``, ``.`` or ``~`` first: never a hub id, :func:`from_hub`) that does not exist or
    is a file other than a ``.gguf``, or any local folder it names (a folder is read before a hub id) that is empty,
    is an error now, before other work (``compare`` evaluated the first model in full before loading the second)."""
    if isinstance(name, str | os.PathLike) and (problem := local_path_problem(str(name))) is not None:
        raise EmbenchError(f"model {str(name)!r}: {problem}")


def local_path_problem(name: str, path: Path | None = None, path_like: bool | None = None) -> str | None:
    """Why ``name`` cannot be a model (:func:`check_local_path`), or None; ``path``: where it points when that is not
    the name itself (a line of a grid's model list, relative to the list); ``path_like``: the name is read as a path
    though it does not look like one (a list line that names an existing file or folder beside the list)."""
    path = (path or Path(name)).expanduser()
    path_like = name.startswith((".", "/", "~")) if path_like is None else path_like
    if path_like and not path.exists():
        return f"the local folder {str(path)!r} does not exist"
    if path_like and path.is_file() and path.suffix != ".gguf":
        return f"{str(path)!r} is a file, not a model folder or a .gguf file"
    # an alias is read before a folder of its name (resolve_model_path): only a folder the name reaches is checked
    if path.is_dir() and (path_like or name not in ALIASES) and not any(path.iterdir()):
        return f"the folder {str(path)!r} is empty, not a model folder"
    return None


def from_hub(hub_id: str, tried: list[str], revision: str | None = None) -> Path | None:
    """The hub's (or the local Hugging Face cache's) copy of ``hub_id`` at ``revision`` (default: the hub's
    default branch), or None with why appended to ``tried``."""
    if hub_id.count("/") > 1 or hub_id.startswith((".", "/", "~")):
        return None
    from huggingface_hub import constants, snapshot_download

    if constants.HF_HUB_OFFLINE and revision is not None:
        revision = cached_commit(hub_id, revision, Path(constants.HF_HUB_CACHE))
    try:
        # offline, a commit is the cache's snapshot of it: huggingface_hub 1.x would otherwise ask the hub for the
        # commit's file list and fail though the cache holds it (online it also fetches what a snapshot lacks)
        cached = constants.HF_HUB_OFFLINE and revision is not None and COMMIT.fullmatch(revision) is not None
        return Path(snapshot_download(hub_id, revision=revision, local_files_only=cached))
    except Exception as e:  # offline, unknown repo or revision, gated, ...
        msg = first_line(e)
        offline = " (HF_HUB_OFFLINE is set)" if constants.HF_HUB_OFFLINE else ""
        at = "" if revision is None else (f" at revision {revision!r}" + (
            ", which the local Hugging Face cache does not hold (fetch it once online" + (
                ")" if revision == "main" else ", or give --revision main if the cache holds the default branch)")
            if offline else ""))
        tried.append(f"hub id {hub_id!r}{at}{offline}: {msg}")
        return None


def cached_commit(hub_id: str, revision: str, cache: Path) -> str:
    """The full commit of the cache's one snapshot whose hash starts with ``revision`` (a short hash, as ``git log``
    and `embench list models` print it), else ``revision`` as given: offline, the hub cannot expand it."""
    if not SHORT_COMMIT.fullmatch(revision):
        return revision
    snapshots = cache / f"models--{hub_id.replace('/', '--')}" / "snapshots"
    found = [p.name for p in snapshots.glob(f"{revision}*") if COMMIT.fullmatch(p.name)] if snapshots.is_dir() else []
    return found[0] if len(found) == 1 else revision


def snapshot_revision(folder: Path) -> str | None:
    """The commit a Hugging Face cache snapshot holds (``.../snapshots/<commit>``), else None."""
    return folder.name if folder.parent.name == "snapshots" and COMMIT.fullmatch(folder.name) else None
