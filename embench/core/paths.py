"""Paths derived from names stay inside their root: a model, task or manifest entry called ``..``,
``/etc`` or ``a/../../b`` is refused (or made a plain name), never followed."""

from __future__ import annotations

import contextlib
import errno
import os
import uuid
from pathlib import Path

from .errors import EmbenchError


def resolved(path: Path | str) -> Path:
    """``path`` with its links followed (``Path.resolve``); a link that leads back to itself is an EmbenchError naming
    the path (pathlib raises a RuntimeError, or on Python 3.13 an OSError, that would end in a traceback)."""
    try:
        return Path(path).resolve()
    except (RuntimeError, OSError) as e:
        if isinstance(e, OSError) and e.errno != errno.ELOOP:
            raise
        raise EmbenchError(f"{path} is a symlink loop (a link that leads back to itself); remove the link or point it "
                           "at a real file or folder") from None


def within(root: Path | str, relative: Path | str, what: str) -> Path:
    """``root / relative``; an EmbenchError when it is absolute or leads outside ``root`` (``..``, a link)."""
    base = resolved(root)
    rel = Path(relative)
    target = resolved(base / rel)
    if rel.is_absolute() or not target.is_relative_to(base):
        raise EmbenchError(f"{what} {str(relative)!r} points outside {root}; refused")
    return Path(root) / rel


def plain_name(name: str, what: str) -> str:
    """``name`` when it is one ordinary path component (no separator, not ``.``/``..``, no NUL)."""
    if name in ("", ".", "..") or "/" in name or "\\" in name or os.sep in name or "\0" in name:
        raise EmbenchError(f"{what} {name!r} cannot be a file name: it would lead outside its folder")
    return name


def unwritable(folder: Path) -> OSError | None:
    """Why files cannot be created in ``folder`` (made if missing), or None: tried with a probe file, before any work."""
    probe = Path(folder) / f".probe-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        return e
    return None


def check_folder_option(folder: Path | str, flag: str) -> None:
    """An output folder given as ``flag``, checked before any work and not made yet: a file there (or in its path), or
    a place that cannot be written, is one message naming the option (rather than a traceback once the work is done
    and its output lost)."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise EmbenchError(f"{flag} {folder} is a file; give a folder")
    if folder.exists():
        e = unwritable(folder)
    else:  # the nearest part of the path that exists must be a folder the user may write in
        parent = next(p for p in folder.absolute().parents if p.exists())
        if not parent.is_dir():
            raise EmbenchError(f"{flag} {folder}: {parent} is a file; give a folder")
        e = None if os.access(parent, os.W_OK | os.X_OK) else _why_not_writable(parent)
    if e is not None:
        raise EmbenchError(f"{flag} {folder}: cannot write there ({e.strerror or e}); choose another folder")


def _why_not_writable(folder: Path) -> OSError:
    """Why ``os.access`` says ``folder`` cannot be written: a read-only file system (a mount, a snapshot) is said as
    such, not as a permission the user could be given."""
    with contextlib.suppress(OSError, AttributeError):  # statvfs: POSIX only
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return OSError(errno.EROFS, os.strerror(errno.EROFS))
    return PermissionError(errno.EACCES, os.strerror(errno.EACCES))


def not_there(path: Path | str, kind: str = "file") -> str:
    """Why ``path`` is not the ``kind`` ("file" or "folder") asked for, in words for an error: a folder given for a
    file, or a file for a folder, is said as such (not as a path that "does not exist")."""
    path = Path(path)
    if kind == "file" and path.is_dir():
        return "is a folder, not a file"
    if kind == "folder" and path.exists() and not path.is_dir():
        return "is a file, not a folder"
    return "does not exist"
