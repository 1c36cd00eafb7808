"""Errors embench raises on bad input. Each one says what was wrong and where."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class EmbenchError(Exception):
    """Base class: an error whose message is meant for the user, shown without a traceback."""


class UnknownNameError(EmbenchError, KeyError):
    """A name (task, suite, pooler, model alias, ...) that is not registered; suggests the nearest."""

    def __init__(self, kind: str, name: str, known: list[str], suggestions: list[str]):
        self.kind, self.name, self.known, self.suggestions = kind, name, known, suggestions
        hint = f" Did you mean {', '.join(repr(s) for s in suggestions)}?" if suggestions else ""
        super().__init__(f"unknown {kind} {name!r}.{hint} Known: {', '.join(known)}")

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.args[0]


class MissingDataError(EmbenchError, FileNotFoundError):
    """A data file the task needs is not in the data root."""

    def __init__(self, path: Path | str, task: str | None = None, root: Path | str | None = None):
        self.path = Path(path)
        self.task = task
        where = f" (data root {root})" if root else ""
        if task:  # ``data download -t`` takes every task, alias and dataset name the readers use (embench/data_names.py)
            hint = f"Get it with `embench data download --task {task}` or point --data / EMBENCH_DATA at a folder that has it."
        else:  # a path the user gave: no download can make it
            hint = "Check the path."
        super().__init__(f"missing data file {self.path}{where}. {hint}")

    def __str__(self) -> str:
        return self.args[0]


class MalformedDataError(EmbenchError, ValueError):
    """A data line that cannot be parsed: names the file and the 1-based line number."""

    def __init__(self, path: Path | str, line: int, problem: str):
        self.path, self.line, self.problem = Path(path), line, problem
        super().__init__(f"{path}:{line}: {problem}")


class CorruptFileError(EmbenchError, OSError):
    """A compressed data file that cannot be read to its end (truncated download, damaged gzip)."""

    def __init__(self, path: Path | str, problem: str):
        self.path, self.problem = Path(path), problem
        # the readers do not know whose file it is: a download repairs only a file of the manifest, never a user's own
        super().__init__(f"{self.path}: {problem}; the file is truncated or damaged: replace it with a whole copy (a file "
                         "the data manifest lists: fetch it again, `embench data download` replaces it)")


class ModelLoadError(EmbenchError):
    """A model that could not be loaded; lists every way that was tried."""

    def __init__(self, name: str, tried: list[str], note: str = ""):
        self.name, self.tried = name, tried
        lines = "\n".join(f"  - {t}" for t in tried)
        super().__init__(f"could not load model {name!r}. Tried:\n{lines}" + (f"\n{note}" if note else ""))


class EmbeddingError(EmbenchError, ValueError):
    """An embedding that is not finite (NaN or inf): names the text that produced it."""


class ChecksumError(EmbenchError):
    """A downloaded or local data file whose sha256 differs from the manifest."""


def first_line(e: BaseException, limit: int | None = None) -> str:
    """The first line of ``e``'s message, cut at ``limit`` characters (its type's name when it has none)."""
    text = str(e).strip()
    return text.splitlines()[0][:limit] if text else type(e).__name__


class UndefinedScoreError(EmbenchError):
    """Scores that do not exist (every similarity of a part equal: no correlation), said once every other task of
    the run is scored and stored; ``evaluation`` holds those (``embench run`` prints their table before the error)."""

    def __init__(self, message: str, evaluation: Any = None) -> None:
        super().__init__(message)
        self.evaluation = evaluation
