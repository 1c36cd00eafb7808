"""What a grid is made of: models (names, a list file or a glob), tasks, and a protocols file.

Everything here is checked before any job is submitted: a glob that matches nothing, an empty list
file, an unknown protocol axis or value in the protocols file (named with the file and the entry).
"""

from __future__ import annotations

import glob
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import EmbenchError
from ..core.yaml_text import load_yaml, yaml_error
from ..evaluation.protocols import EvalProtocol
from ..models.model_names import local_path_problem

GLOB_CHARS = "*?["
MODEL_FILE_SUFFIXES = (".txt", ".list", ".lst")


def expand_models(entries: Sequence[str], origins: dict[str, str] | None = None) -> list[str]:
    """Model names in order, each once: a ``.txt``/``.list`` file gives one model per line (``#`` comments),
    a pattern with ``* ? [`` gives its sorted matches, anything else is a model name, alias or folder.

    A pattern that matches nothing, or a list file that names no model, is an error now, before any
    job exists. ``origins`` receives the line that named each model of a list file (``specs/list.txt:3``): a
    line kept as a hub id fails only when planning loads it, and that error names the line.
    """
    out: list[str] = []
    for entry in entries:
        path = Path(entry).expanduser()
        if path.is_file() and path.suffix in MODEL_FILE_SUFFIXES:
            names = _read_model_list(path, origins if origins is not None else {})
        elif any(c in entry for c in GLOB_CHARS) and not path.exists():
            names = sorted(glob.glob(str(path)))
            if not names:
                raise EmbenchError(f"--models {entry!r}: the pattern matches nothing; no job was submitted")
        else:
            names = [_checked_path(entry, f"--models {entry!r}", entry)]
        out += names
    if not out:
        raise EmbenchError("no models: give --models NAME, a list file (.txt, one model a line) or a glob")
    # one model once, however it is spelt (runs/a, ./runs/a/, /abs/runs/a): each spelling was a job of the same cells
    first: dict[str, str] = {}
    for name in out:
        first.setdefault(_same_folder(name), name)
    return list(first.values())


def _same_folder(name: str) -> str:
    path = Path(name).expanduser()
    return str(path.resolve()) if path.exists() else name


def _read_model_list(path: Path, origins: dict[str, str]) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:  # a list saved as UTF-16 (Windows' Notepad), or not a list at all
        raise EmbenchError(f"{path}: the model list is not UTF-8 text (byte {e.start}); save it as UTF-8, "
                           "one model name, folder or glob a line") from None
    names = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if line:
            found = _list_entry(path, number, line)
            origins.update({name: f"{path}:{number}" for name in found if name not in origins})
            names += found
    if not names:
        raise EmbenchError(f"{path}: the model list names no model (one name, folder or glob a line)")
    return names


def _list_entry(path: Path, number: int, line: str) -> list[str]:
    """Line ``number`` of the model list ``path``: a relative folder or pattern is relative to the list file, as its
    reader would expect; a name that is no file there (an alias, a hub id) is kept as it is."""
    rel = line if Path(line).is_absolute() else str(path.parent / line)
    if any(c in line for c in GLOB_CHARS):
        found = sorted(glob.glob(rel))
        if not found:
            raise EmbenchError(f"{path}:{number}: the pattern {line!r} matches nothing (relative to the list's folder); "
                               "no job was submitted")
        return found
    # a line naming something beside the list is that path: a file or an empty folder there is refused as
    # `--models` refuses one, naming the line (it was kept and failed only when planning reached it)
    return [_checked_path(rel, f"{path}:{number}", rel, path_like=True) if Path(rel).exists()
            else _checked_path(line, f"{path}:{number}", rel)]


def _checked_path(name: str, where: str, folder: str, path_like: bool | None = None) -> str:
    """``name`` kept as an alias or hub id, unless it reads as a path (``.``, ``/`` or ``~`` first: never a hub id)
    that cannot be a model (``models.model_names.local_path_problem``: missing, a file, an empty folder): said now,
    naming ``where``, not when planning reaches it after loading other models."""
    if (problem := local_path_problem(name, Path(folder), path_like)) is not None:
        raise EmbenchError(f"{where}: {problem}; no job was submitted")
    return name


def read_protocols(path: Path | str | None) -> list[dict[str, Any]]:
    """The protocols of a grid from a YAML or JSON file: a list of mappings of protocol axes
    (``embench list`` / ``evaluation/protocols.py``), each validated; no file means one protocol,
    the default (SimCSE's). A mapping may carry a ``name`` shown in the status table."""
    if path is None:
        return [{}]
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise EmbenchError(f"--protocols {path}: cannot read it ({e.strerror or e})") from None
    except UnicodeDecodeError as e:  # saved as UTF-16 (Windows' Notepad), or not a protocols file at all
        raise EmbenchError(f"--protocols {path}: not UTF-8 text (byte {e.start}); save it as UTF-8") from None
    if path.suffix == ".json":
        try:
            raw = json.loads(text)
        except (ValueError, RecursionError) as e:  # the parser's message names the line
            raise EmbenchError(f"--protocols {path}: not valid JSON: {e}") from None
    else:
        import yaml

        try:
            raw = load_yaml(text)  # one key twice in an entry is refused (PyYAML kept the last, silently)
        except yaml.YAMLError as e:
            raise EmbenchError(f"--protocols {yaml_error(str(path), e)}") from None
    if isinstance(raw, dict) and "protocols" in raw:
        raw = raw["protocols"]
    if not isinstance(raw, list) or not raw:
        raise EmbenchError(f"--protocols {path}: expected a non-empty list of protocol settings, e.g. "
                           "'- {aggregation: all}' then '- {aggregation: wmean, correlation: pearson}'")
    out, resolved = [], []
    for i, entry in enumerate(raw, 1):
        if entry is None:
            entry = {}
        if not isinstance(entry, dict):
            raise EmbenchError(f"--protocols {path}: entry {i} is a {type(entry).__name__}, not a mapping of protocol options")
        # a key YAML read as a number ({1: 2}) or a list name ({name: [a, b]}) is a typo, named here, not a traceback
        # or a label "['a', 'b']"
        if bad := [k for k in entry if not isinstance(k, str)]:
            raise EmbenchError(f"--protocols {path}: entry {i}: {bad[0]!r} is not an option name; give protocol "
                               "options by name, e.g. '- {aggregation: all}'")
        if "name" in entry and (isinstance(entry["name"], (dict, list, bool)) or entry["name"] is None):
            raise EmbenchError(f"--protocols {path}: entry {i}: name {entry['name']!r} is not a name; give one word "
                               "or a number, e.g. 'name: flow'")
        settings = {k.replace("-", "_"): v for k, v in entry.items() if k != "name"}
        try:
            resolved.append(EvalProtocol.from_options(**settings).to_dict())
        except EmbenchError as e:
            raise EmbenchError(f"--protocols {path}: entry {i}: {e}") from None
        same = resolved.index(resolved[-1]) + 1
        if same < i:  # one protocol twice (defaults spelt out or not): two planned cells of one record
            raise EmbenchError(f"--protocols {path}: entries {same} and {i} are the same protocol "
                               f"({', '.join(f'{k}={v}' for k, v in settings.items()) or 'the default'}); give each once")
        if "name" in entry and (twin := next((j for j, o in enumerate(out, 1) if o.get("name") == str(entry["name"])), 0)):
            raise EmbenchError(f"--protocols {path}: entries {twin} and {i} share the name {str(entry['name'])!r}; the "
                               "status table tells protocols apart by it: give each its own")
        out.append({**settings, **({"name": str(entry["name"])} if "name" in entry else {})})
    return out


@dataclass
class GridSpec:
    """A grid as the user gave it (models expanded, protocols read): what ``plan`` turns into cells."""

    models: list[str]
    tasks: list[str]
    protocols: list[dict[str, Any]]
    suite: str | None = None
    model_options: dict[str, Any] = field(default_factory=dict)
    data: str | None = None
    cache_dir: str | None = None
    batch_size: int | None = None
    devices: list[str] = field(default_factory=list)  # more than one: texts sharded over one process each
    origins: dict[str, str] = field(default_factory=dict)  # model -> the list file's line that named it (expand_models)

    def to_dict(self) -> dict[str, Any]:
        # where the models were named is not what the grid is: the plan's name (its hash) stays the same from any list
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "origins"}
