"""Atomic writes: a file is written under a temporary name of its own, then renamed over the final name,
so a reader (or the next run after a kill -9 or a full disk) sees the whole old file or the whole new one,
never a half-written one. Every file embench writes for later use goes through here: result records,
per-item outcomes, cache shards, downloaded data, seed groups, generation settings.

The temporary name is hidden and unique across the machines of a shared folder (host, process, random
part: a process id alone repeats across the nodes of a cluster), so two writers never share one, and a
failed write removes its temporary file. ``os.replace`` is atomic on POSIX and Windows for files of
one folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

TMP_SUFFIX = ".tmp"  # a temporary file is ``.<name>.<unique>.tmp``


def unique_suffix() -> str:
    """Host, process and a random part: no two writers of one shared folder, on any machine, pick the
    same temporary name."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def temporary_name(path: Path) -> Path:
    """The hidden, unique name ``path`` is written under before it is renamed into place."""
    return path.with_name(f".{path.name}.{unique_suffix()}{TMP_SUFFIX}")


@contextlib.contextmanager
def atomic_file(path: Path | str, *, fsync: bool = False) -> Iterator[IO[bytes]]:
    """A binary file to write ``path``'s new content into; renamed over ``path`` when the block ends
    without an error, removed when it raises. ``fsync``: the bytes reach the disk before the name does
    (a power cut then leaves the old file or the new one, not an empty new one)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_name(path)
    try:
        with open(tmp, "wb") as fh:
            yield fh
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):  # a full disk must not keep a half-written temporary file
            tmp.unlink(missing_ok=True)
        raise


def write_bytes(path: Path | str, data: bytes, *, fsync: bool = False) -> Path:
    """Write ``data`` to ``path`` atomically."""
    with atomic_file(path, fsync=fsync) as fh:
        fh.write(data)
    return Path(path)


def write_text(path: Path | str, text: str, *, encoding: str = "utf-8", fsync: bool = False) -> Path:
    """Write ``text`` to ``path`` atomically."""
    return write_bytes(path, text.encode(encoding), fsync=fsync)


def write_json(path: Path | str, obj: Any, *, indent: int | None = 2, default: Callable[[Any], Any] | None = str,
               sort_keys: bool = False, fsync: bool = False) -> Path:
    """``obj`` as JSON (``indent`` spaces, a final newline) written to ``path`` atomically; ``default``
    turns what JSON cannot hold into something it can (paths, numpy scalars; ``str`` unless given)."""
    text = json.dumps(obj, indent=indent, default=default, sort_keys=sort_keys) + "\n"
    return write_text(path, text, fsync=fsync)


def replace_folder(staged: Path, folder: Path) -> Path:
    """Put the complete folder ``staged`` (written beside ``folder``) in ``folder``'s place. An existing
    ``folder`` is renamed to ``<folder>.old`` first and removed last, so at every moment there is a whole
    folder under one of the two names (``--resume`` finishes a cut export from the ``.old`` one)."""
    old = folder.with_name(folder.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    staged.rename(folder)
    shutil.rmtree(old, ignore_errors=True)
    return folder
