"""Atomic writes: a file is written under a temporary name of its own, then renamed over the final name,
so a reader (or the next run after a kill -9 or a full disk) sees the whole old file or the whole new one,
never a half-written one. Every file embench writes for later use goes through here: result records,
per-item outcomes, cache shards, downloaded data, seed groups, generation settings, and the outputs a user asks
for (``report -o``, ``analyze``'s tables and figures, ``generate``'s files, the training log).

The temporary name is hidden and unique across the machines of a shared folder (host, process, random
part: a process id alone repeats across the nodes of a cluster), so two writers never share one, and a
failed write removes its temporary file. ``os.replace`` is atomic on POSIX and Windows for files of
one folder.

An output the user names may not be a plain file of its own folder. A symlink (``-o docs/table.md`` linking
elsewhere) is written through: its target is replaced, with the temporary name in the target's folder, so the link
stays a link. A FIFO, a terminal or ``/dev/stdout`` is written in place: there is nothing to replace, and no
temporary file can be made in ``/dev``. A replaced file keeps its permission bits (a 0600 file stays 0600).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from .errors import EmbenchError

TMP_SUFFIX = ".tmp"  # a temporary file is ``.<name>.<unique>.tmp``
STALE_SECONDS = 600  # a temporary file this old was left by a writer that died (a writer renames within seconds)


def unique_suffix() -> str:
    """Host, process and a random part: no two writers of one shared folder, on any machine, pick the
    same temporary name."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def sweep_stale(folder: Path, pattern: str, older_than: float = STALE_SECONDS) -> None:
    """Remove the temporary files matching ``pattern`` in ``folder`` that a killed writer left (kill -9 between the
    write and the rename): one older than ``older_than`` seconds has no writer left, on this machine or another."""
    now = time.time()
    for tmp in Path(folder).glob(pattern) if Path(folder).is_dir() else ():
        with contextlib.suppress(OSError):  # another sweeper took it, or a read-only folder: nothing to do
            if tmp.name.endswith(TMP_SUFFIX) and now - tmp.stat().st_mtime > older_than:
                tmp.unlink()


def temporary_name(path: Path) -> Path:
    """The hidden, unique name ``path`` is written under before it is renamed into place."""
    return path.with_name(f".{path.name}.{unique_suffix()}{TMP_SUFFIX}")


_STREAMS = ("/dev/stdout", "/dev/stderr", "/dev/stdin")


def _target(path: Path) -> tuple[Path, bool, int | None]:
    """The name to write (a symlink's resolved target), whether to write it in place (not a regular file), and the
    permission bits to give the replacement (the old file's; None for a new file: the umask decides)."""
    try:
        st = os.stat(path)  # follows symlinks: the kind and mode of what the name leads to
    except OSError:
        st = None
    # /dev/stdout, /dev/fd/N and /proc/.../fd/N lead to this process's descriptors: replacing what they resolve to (a
    # pipe's ``pipe:[N]``, a redirected file the shell holds open) would miss the stream, so write them in place.
    # Not all of /dev: a cache in /dev/shm is a folder of regular files, replaced atomically like any other.
    name = os.path.abspath(path)
    special = name in _STREAMS or name.startswith(("/dev/fd/", "/proc/"))
    if special or (st is not None and not stat.S_ISREG(st.st_mode)):
        return path, True, None
    return Path(os.path.realpath(path)), False, (stat.S_IMODE(st.st_mode) if st is not None else None)


@contextlib.contextmanager
def atomic_file(path: Path | str, *, fsync: bool = False) -> Iterator[IO[bytes]]:
    """A binary file to write ``path``'s new content into; renamed over ``path`` when the block ends
    without an error, removed when it raises (:func:`atomic_path`). ``fsync``: the bytes reach the disk before the
    name does (a power cut then leaves the old file or the new one, not an empty new one)."""
    with atomic_path(path) as name, open(name, "wb") as fh:  # closed before atomic_path renames it
        yield fh
        if fsync and stat.S_ISREG(os.fstat(fh.fileno()).st_mode):  # a FIFO or a device written in place has no disk
            fh.flush()
            os.fsync(fh.fileno())


@contextlib.contextmanager
def atomic_path(path: Path | str) -> Iterator[Path]:
    """A temporary name to give a writer that opens the file itself (matplotlib's ``savefig``, pandas' ``to_csv``):
    renamed over ``path`` when the block ends without an error, removed when it raises. The name ends in ``.tmp``:
    a writer that picks its format by the extension must be told the format."""
    path, in_place, mode = _target(Path(path))
    if in_place:  # the writer writes a FIFO or a device itself
        yield path
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_name(path)
    try:
        yield tmp
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


class OutputNotWritten(EmbenchError):
    """An output the user asked for could not be written (a full disk, a file over ``ulimit -f``, a read-only file
    system); the file there before, if any, is as it was."""


@contextlib.contextmanager
def output_errors(path: Path | str, what: str = "") -> Iterator[None]:
    """An OSError in the block is one error naming ``path`` (not the temporary name the OSError carries)."""
    try:
        yield
    except OSError as e:
        why = e.strerror or str(e)
        raise OutputNotWritten(f"{what}{' ' if what else ''}{path}: could not be written ({why}); a file there "
                               "before is kept as it was") from None


def write_output(path: Path | str, text: str, what: str = "") -> Path:
    """``text`` written to ``path`` atomically; a failure is one error naming ``path`` (``what`` names its option)."""
    with output_errors(path, what):
        return write_text(path, text)


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
