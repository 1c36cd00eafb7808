"""The data root: one folder that holds all data.

Resolved in this order: the ``--data`` option, the ``EMBENCH_DATA`` environment variable,
``~/.cache/embench/data``. Three layouts are accepted:

* embench's own (``senteval/downstream``, ``raw``, ``tasks``, ``corpora``), which
  ``embench data download`` writes;
* a SentEval ``data`` folder (``downstream/STS``, ...);
* a SentEval ``data/downstream`` folder given directly (``STS``, ``SICK``, ``MR``, ...).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import EmbenchError, MissingDataError
from ..core.hashing import file_sha256  # noqa: F401  (where the readers and records import it from)
from ..core.paths import not_there, resolved

DEFAULT_ROOT = Path("~/.cache/embench/data")
SENTEVAL_MARKERS = ("STS", "SICK", "MR", "CR", "SUBJ", "MPQA", "SST", "TREC", "MRPC", "SNLI")


def resolve_data_root(option: str | os.PathLike | None = None) -> Path:
    """The data root folder: ``option``, else ``$EMBENCH_DATA``, else ``~/.cache/embench/data``."""
    raw = option if option not in (None, "") else os.environ.get("EMBENCH_DATA") or DEFAULT_ROOT
    return resolved(Path(raw).expanduser())


@dataclass(frozen=True)
class DataRoot:
    """Paths inside a data root, whatever its layout."""

    path: Path

    @classmethod
    def resolve(cls, option: str | os.PathLike | None = None) -> DataRoot:
        return cls(resolve_data_root(option))

    def require(self) -> DataRoot:
        """This root, when it is a folder: a run never silently reuses stored records against a root that
        does not exist (a mistyped --data)."""
        if not self.path.is_dir():
            source = "EMBENCH_DATA" if os.environ.get("EMBENCH_DATA") else "the default"
            raise EmbenchError(
                f"data root {self.path} {not_there(self.path, 'folder')} (--data, else {source}); point --data or EMBENCH_DATA at "
                "a data root, or make one with `embench data download`")
        return self

    @property
    def senteval(self) -> Path:
        """The folder that holds SentEval's task folders (``STS``, ``SICK``, ``MR``, ...)."""
        if (self.path / "senteval" / "downstream").is_dir():
            return self.path / "senteval" / "downstream"
        if (self.path / "downstream").is_dir():
            return self.path / "downstream"
        if any((self.path / m).is_dir() for m in SENTEVAL_MARKERS):
            return self.path
        return self.path / "senteval" / "downstream"

    @property
    def raw(self) -> Path:
        return self.path / "raw"

    @property
    def tasks(self) -> Path:
        return self.path / "tasks"

    @property
    def corpora(self) -> Path:
        return self.path / "corpora"

    def find(self, path: Path, task: str | None = None) -> Path:
        """``path`` itself, or its gzip-compressed or uncompressed twin; else a MissingDataError."""
        candidates = [path]
        if path.suffix == ".gz":
            candidates.append(path.with_suffix(""))
        else:
            candidates.append(path.with_name(path.name + ".gz"))
        for c in candidates:
            if c.is_file():
                return c
            if c.is_symlink():
                resolved(c)  # a link that leads back to itself is said as such, not as a missing file
        raise MissingDataError(path, task=task, root=self.path)

    def relative(self, path: Path) -> str:
        try:
            return str(resolved(path).relative_to(self.path))
        except ValueError:
            return str(path)

    def manifest_paths(self, path: Path) -> list[str]:
        """The manifest paths (embench layout) ``path`` may stand for: :func:`located` read backwards (a SentEval
        layout's ``downstream/STS/...`` is the manifest's ``senteval/downstream/STS/...``), then as it lies in the root."""
        rel, senteval = self.relative(path), resolved(self.senteval)
        real = resolved(path)
        inside = [SENTEVAL_PREFIX + str(real.relative_to(senteval))] if real.is_relative_to(senteval) else []
        return [*inside, rel]

    def recorded(self, rel: str) -> Path:
        """Where the data file a record names by ``rel`` lies in this root. ``rel`` is relative to the root the record was
        computed from, which may be of another of the three layouts (the same files given as ``data``, ``data/senteval``
        or ``data/senteval/downstream``): as named, when this root holds it so, else its manifest path located here."""
        if Path(rel).is_absolute():  # a file outside the root (a task file's own)
            return Path(rel)
        same = self.path / rel
        return same if same.is_file() else located(self, manifest_path(rel))


SENTEVAL_PREFIX = "senteval/downstream/"  # the manifest's SentEval files, in embench's layout


def manifest_path(rel: str) -> str:
    """The manifest path (embench layout) of ``rel``, relative to a data root of any layout: a SentEval ``data``
    folder's ``downstream/TREC/...`` and a ``downstream`` folder's ``TREC/...`` are ``senteval/downstream/TREC/...``."""
    first = Path(rel).parts[0] if Path(rel).parts else ""
    if first == "downstream":
        return "senteval/" + Path(rel).as_posix()
    if first in SENTEVAL_MARKERS:
        return SENTEVAL_PREFIX + Path(rel).as_posix()
    return rel


def located(root: DataRoot, rel: str) -> Path:
    """Where a manifest path (embench layout) lives in ``root``, whatever its layout."""
    return root.senteval / rel[len(SENTEVAL_PREFIX):] if rel.startswith(SENTEVAL_PREFIX) else root.path / rel




def layout_paths(rel: str) -> list[str]:
    """The paths a manifest path (embench layout) may have in a data root of each of the three layouts, embench's first:
    a mirror is read by URL, so its layout cannot be looked at as :func:`located` looks at a folder's."""
    if not rel.startswith(SENTEVAL_PREFIX):
        return [rel]
    rest = rel[len(SENTEVAL_PREFIX):]
    return [rel, f"downstream/{rest}", rest]
