"""A task file: the declaration of a task on a user's own data, in YAML or TOML.

As lm-evaluation-harness reads a task from a few declared fields (``--include_path``), a task file
declares its name, its kind (``pairs``: sentence pairs with gold scores, scored as STS;
``classification``: one text and a label; ``pair-classification``: two texts and a label, both scored
as SentEval transfer tasks), its files per split (paths relative to the task file), their format
(tsv, csv, jsonl) and columns, and for pairs the range the gold scores lie in. Every mistake is an
:class:`EmbenchError` naming the task file, the key and, where the parser says, the line.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.errors import EmbenchError
from ...core.paths import not_there, resolved
from ...core.registry import nearest
from ...core.yaml_text import load_yaml_node, yaml_error

# kind -> the roles its rows must have, and the optional ones
ROLES: dict[str, tuple[str, ...]] = {
    "pairs": ("sentence1", "sentence2", "score"),
    "classification": ("text", "label"),
    "pair-classification": ("sentence1", "sentence2", "label"),
}
OPTIONAL_ROLES: dict[str, tuple[str, ...]] = {"pairs": ("subset",)}  # pairs: scored per subset, then aggregated
SPLITS = ("train", "dev", "test", "all")
FORMATS = {".tsv": "tsv", ".txt": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl"}
KEYS = ("name", "kind", "files", "format", "header", "quoting", "columns", "score_range", "labels", "display",
        "description", "citation")
QUOTING = ("none", "csv")  # tsv: fields as written (STS's files), or quoted as pandas and spreadsheets write TSV
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # a plain name: it becomes part of a record's file name
# classification splits -> SentEval's validation scheme (embench.tasks.senteval.validation)
SCHEMES = {("test", "train"): "kfold", ("dev", "test", "train"): "split"}


@dataclass(frozen=True)
class Declaration:
    """A task file, read and checked: where each split's file is and how its rows read."""

    path: Path  # the task file (resolved)
    name: str
    kind: str  # pairs | classification | pair-classification
    files: dict[str, Path]  # split -> data file (resolved)
    format: str  # tsv | csv | jsonl
    header: bool  # tsv/csv: the first line names the columns
    columns: dict[str, str | int]  # role -> a header name or JSON key, or a 0-based index (no header)
    score_range: tuple[float, float] | None = None  # pairs
    labels: tuple[str, ...] | None = None  # classification: the labels in order (None: the sorted values found)
    display: str = ""
    description: str = ""
    citation: str = ""
    name_line: int | None = None  # the line of the name key, for errors about the name found later (a clash)
    quoting: str | None = None  # tsv: none | csv; unset: as none, but a field that looks CSV-quoted is refused

    @property
    def scheme(self) -> str:
        """Classification: SentEval's scheme for the splits given (one split alone: nested k-fold over it)."""
        return "nested" if len(self.files) == 1 else SCHEMES[tuple(sorted(self.files))]


class _Where:
    """Error messages that name the task file, the key and (when known) its line."""

    def __init__(self, path: Path, lines: dict[str, int]):
        self.path, self.lines = path, lines

    def error(self, key: str, problem: str) -> EmbenchError:
        parts = key.split(".")
        line = next((self.lines[k] for k in (".".join(parts[:i]) for i in range(len(parts), 0, -1)) if k in self.lines),
                    None)
        return EmbenchError(f"{self.path}{f':{line}' if line else ''}: {key}: {problem}")


def _yaml(path: Path, text: str) -> tuple[Any, dict[str, int]]:
    import yaml

    try:
        # a declaration never needs anchors and aliases; a few nested ones (a "billion laughs") expand past any memory
        if any(isinstance(e, yaml.AliasEvent) for e in yaml.parse(text, Loader=yaml.SafeLoader)):
            raise EmbenchError(f"{path}: YAML aliases (*name) are not accepted in a task file; write each value out")
        lines: dict[str, int] = {}

        def walk(node: Any, prefix: str) -> None:  # the line of every key, from the node tree the parser builds
            if isinstance(node, yaml.MappingNode):
                for k, v in node.value:
                    lines.setdefault(f"{prefix}{k.value}", k.start_mark.line + 1)
                    walk(v, f"{prefix}{k.value}.")

        raw, node = load_yaml_node(text)  # a key given twice is refused, naming its line (PyYAML kept the last)
        walk(node, "")
        return raw, lines
    except yaml.YAMLError as e:  # the parser's own message names "<unicode string>": this names the file, line, column
        raise EmbenchError(yaml_error(str(path), e)) from None


def _toml(path: Path, text: str) -> tuple[Any, dict[str, int]]:
    text = text.removeprefix("\ufeff")  # a byte-order mark (a Windows editor's): tomllib refuses it, YAML and data files skip it
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:  # its message names the line and column
        raise EmbenchError(f"{path}: not valid TOML: {e}") from None
    lines, prefix = {}, ""  # tomllib keeps no positions: the line where each key is first written
    for i, line in enumerate(text.splitlines(), start=1):
        if m := re.match(r"\s*\[([A-Za-z0-9_.-]+)\]\s*(#.*)?$", line):
            prefix = m.group(1) + "."
            lines.setdefault(m.group(1), i)
        elif m := re.match(r"\s*([A-Za-z0-9_-]+)\s*=", line):
            lines.setdefault(prefix + m.group(1), i)
    return raw, lines


def read_declaration(path: str | Path) -> Declaration:
    """The task file at ``path``, checked: keys, kind, splits and their files, columns, score range, labels."""
    path = resolved(Path(path).expanduser())
    if not path.is_file():
        raise EmbenchError(f"task file {path} {not_there(path)}")
    parse = {".yaml": _yaml, ".yml": _yaml, ".toml": _toml}.get(path.suffix.lower())
    if parse is None:
        raise EmbenchError(f"task file {path}: expected a .yaml, .yml or .toml file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise EmbenchError(f"{path}: not valid UTF-8 ({e.reason})") from None
    raw, lines = parse(path, text)
    if not isinstance(raw, dict):
        raise EmbenchError(f"{path}: expected a mapping of keys (name, kind, files, ...), found {type(raw).__name__}")
    return _check(raw, _Where(path, lines))


def _text(raw: dict, key: str, where: _Where, required: bool = False) -> str:
    value = raw.get(key)
    if value is None:
        if required:
            raise where.error(key, "missing; a task file needs name, kind and files")
        return ""
    if not isinstance(value, str):
        raise where.error(key, f"expected a string, found {type(value).__name__} {value!r}")
    return value


def _check(raw: dict, where: _Where) -> Declaration:
    for key in raw:
        if key not in KEYS:
            hint = f"; did you mean {', '.join(nearest(str(key), list(KEYS)))}?" if nearest(str(key), list(KEYS)) else ""
            raise where.error(str(key), f"unknown key{hint} (known: {', '.join(KEYS)})")
    name = _text(raw, "name", where, required=True)
    if not NAME.fullmatch(name):
        raise where.error("name", f"{name!r} is not a plain name (letters, digits, '.', '_', '-'; a letter or digit first)")
    kind = _text(raw, "kind", where, required=True)
    if kind not in ROLES:
        hint = f"did you mean {', '.join(nearest(kind, list(ROLES)))}? " if nearest(kind, list(ROLES)) else ""
        raise where.error("kind", f"unknown kind {kind!r}; {hint}choose one of: {', '.join(ROLES)}")
    files = _files(raw, kind, where)
    fmt = _format(raw, files, where)
    header = raw.get("header", True)
    if not isinstance(header, bool):
        raise where.error("header", f"expected true or false, found {header!r}")
    quoting = raw.get("quoting")
    if quoting is not None and (fmt != "tsv" or quoting not in QUOTING):
        raise where.error("quoting", f"expected none or csv, found {quoting!r}" if fmt == "tsv" else
                          f"applies to format tsv; a {fmt} file is read as {fmt} is written")
    columns = _columns(raw, kind, fmt, header, where)
    score_range = labels = None
    if kind == "pairs":
        score_range = _score_range(raw, where)
    elif "score_range" in raw:
        raise where.error("score_range", f"applies to kind pairs; a {kind} task has labels")
    if kind != "pairs":
        labels = _labels(raw, where)
    elif "labels" in raw:
        raise where.error("labels", "applies to classification kinds; a pairs task has a score_range")
    return Declaration(where.path, name, kind, files, fmt, header, columns, score_range, labels,
                       _text(raw, "display", where), _text(raw, "description", where), _text(raw, "citation", where),
                       where.lines.get("name"), quoting)


def _files(raw: dict, kind: str, where: _Where) -> dict[str, Path]:
    given = raw.get("files")
    if given is None:
        raise where.error("files", "missing; give the data file of each split, e.g. files: {test: test.tsv}")
    if isinstance(given, str):  # one file: the scored split of a pairs task, the one pool of a classification task
        given = {"test" if kind == "pairs" else "all": given}
    if not isinstance(given, dict) or not given:
        raise where.error("files", f"expected a mapping of split -> file ({', '.join(SPLITS)}), found {given!r}")
    files = {}
    for split, file in given.items():
        if split not in SPLITS:
            raise where.error(f"files.{split}", f"unknown split; splits are {', '.join(SPLITS)}")
        if not isinstance(file, str) or not file:
            raise where.error(f"files.{split}", f"expected a file name, found {file!r}")
        try:
            path = resolved(where.path.parent / Path(file).expanduser())  # relative to the task file
        except EmbenchError as e:  # a symlink loop
            raise where.error(f"files.{split}", f"data file {e}") from None
        if not path.is_file():
            raise where.error(f"files.{split}", f"data file {path} {not_there(path)}")
        files[split] = path
    splits = tuple(sorted(files))
    if kind == "pairs" and ("test" not in files or "all" in files):
        raise where.error("files", f"a pairs task scores its test split: give test (and train and dev for "
                                   f"--scoring regressor); found {', '.join(splits)}")
    if kind != "pairs" and len(files) > 1 and splits not in SCHEMES:
        raise where.error("files", f"a {kind} task takes one split (nested k-fold over it), train and test (k-fold on "
                                   f"train, then test) or train, dev and test; found {', '.join(splits)}")
    return files


def _format(raw: dict, files: dict[str, Path], where: _Where) -> str:
    fmt = raw.get("format")
    if fmt is None:  # from the file names (a .gz suffix aside)
        found = {FORMATS.get(Path(p.name.removesuffix(".gz")).suffix.lower()) for p in files.values()}
        if len(found) != 1 or None in found:
            raise where.error("format", "cannot tell the format from the file names; set format: tsv, csv or jsonl")
        return found.pop()  # type: ignore[return-value]
    if fmt not in set(FORMATS.values()):
        raise where.error("format", f"unknown format {fmt!r}; choose one of: tsv, csv, jsonl")
    return fmt


def _columns(raw: dict, kind: str, fmt: str, header: bool, where: _Where) -> dict[str, str | int]:
    given = raw.get("columns")
    if given is None:  # absent or null: none given; a falsy 0, "", [] or false is a mistake like any non-mapping
        given = {}
    if not isinstance(given, dict):
        raise where.error("columns", f"expected a mapping of role -> column, found {given!r}")
    known = ROLES[kind] + OPTIONAL_ROLES.get(kind, ())
    for role in given:
        if role not in known:
            raise where.error(f"columns.{role}", f"not a column of a {kind} task; its columns are {', '.join(known)}")
    columns = {role: given.get(role, role) for role in ROLES[kind]}  # default: a column named as its role
    columns.update({role: given[role] for role in OPTIONAL_ROLES.get(kind, ()) if role in given})
    for role, col in columns.items():
        named = isinstance(col, str) and col != ""
        index = isinstance(col, int) and not isinstance(col, bool) and col >= 0
        if not (named or index) or (index and fmt == "jsonl") or (named and fmt != "jsonl" and not header):
            want = ("a key of the JSON objects" if fmt == "jsonl" else
                    "a column name of the header line or a 0-based index" if header else
                    "a 0-based column index (header: false)")
            raise where.error(f"columns.{role}", f"expected {want}, found {col!r}")
    return columns


def _score_range(raw: dict, where: _Where) -> tuple[float, float]:
    value = raw.get("score_range")
    if value is None:
        raise where.error("score_range", "missing; a pairs task declares the range its gold scores lie in, e.g. [0, 5]")
    ok = isinstance(value, list) and len(value) == 2 and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)
    if not ok or value[0] >= value[1]:
        raise where.error("score_range", f"expected [min, max] with min < max, found {value!r}")
    return float(value[0]), float(value[1])


def _labels(raw: dict, where: _Where) -> tuple[str, ...] | None:
    value = raw.get("labels")
    if value is None:
        return None
    if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, (str, int)) for v in value):
        raise where.error("labels", f"expected a list of labels (strings or integers), found {value!r}")
    labels = tuple(str(v) for v in value)
    if len(set(labels)) != len(labels) or len(labels) < 2:
        raise where.error("labels", f"expected at least two distinct labels, found {value!r}")
    return labels
