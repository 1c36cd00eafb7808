"""Result records with provenance, and the results store.

One JSON file per (model configuration, task, protocol), written atomically (temporary file, then
rename). The file name carries a hash of everything that identifies the result, so results under
different protocols never overwrite each other, and a re-run finds the records it already has.
A stored record is checked before it is reused (``record_problem``): one that does not decode, lacks
a field, does not match its key or has a main score that is not finite or outside [-1, 1] is named
once in a warning and computed again; it never stops a run.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import io
import json
import logging
import os
import re
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..core.atomic import TMP_SUFFIX, atomic_path, sweep_stale, write_json
from ..core.errors import EmbenchError
from ..core.hashing import stable_hash
from ..core.identity_fields import ENCODER_FIELDS, OPTIONAL_FIELDS
from ..core.paths import plain_name, unwritable
from ..core.signals import interrupts_held
from .items import Items
from .record_checks import score_problem, shown_number
from .task_data import KEY, TASK_DATA, data_digest

log = logging.getLogger(__name__)


@dataclass
class Record:
    """One task's result for one model configuration under one protocol."""

    task: str
    display: str
    kind: str
    model: str
    main_score: float
    scores: dict[str, Any]
    protocol: dict[str, Any]
    encoder: dict[str, Any]
    provenance: dict[str, Any] = field(default_factory=dict)
    key: str = ""
    items: dict[str, Any] = field(default_factory=dict)  # the items file beside it: kind, n, digest, sha256
    ci: dict[str, Any] = field(default_factory=dict)  # the latest interval: level, resamples, seed, low, high

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Record:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


IDENTITY_ENCODER_FIELDS = ENCODER_FIELDS  # core/identity_fields.py: also what tells table rows apart
IDENTITY_OPTIONAL_FIELDS = OPTIONAL_FIELDS


def record_key(task: str, encoder: dict[str, Any], protocol: dict[str, Any]) -> str:
    """Identity of a result: the task, the encoder configuration and the protocol."""
    ident = {k: encoder.get(k) for k in IDENTITY_ENCODER_FIELDS}
    ident.update({k: encoder[k] for k in IDENTITY_OPTIONAL_FIELDS if encoder.get(k)})
    return stable_hash({"task": task, "encoder": ident, "protocol": protocol}, 16)


def slug(name: str) -> str:
    base = name.rstrip("/").replace("\\", "/")
    if "/" in base and Path(base).expanduser().exists():
        base = Path(base).name
    return _folder_name(base)


def _folder_name(base: str) -> str:
    # leading dots go: '.', '..' and hidden names are not folders `results show` would read
    return re.sub(r"[^A-Za-z0-9._-]+", "__", base).strip("_").lstrip(".") or "model"


def _folders_of(name: str) -> set[str]:
    """Every folder slug() may have given a record's model name when it was stored, whatever the folder it was run
    from: its last part (a path that existed from there: ``models/bert-a``, ``../models/bert-a``) or all of it."""
    base = name.rstrip("/").replace("\\", "/")
    return {_folder_name(Path(base).name), _folder_name(base)} if "/" in base else {_folder_name(base)}


FIELD_TYPES = {"task": str, "display": str, "kind": str, "model": str, "scores": dict, "protocol": dict,
               "encoder": dict, "provenance": dict, "key": str}


def record_problem(raw: Any, model: str | None = None, task: str | None = None, key: str | None = None,
                   folder: str | None = None) -> str | None:
    """Why a decoded record file cannot be trusted, or None: its schema, its key against its content
    (and against the model, task and key it was looked up by, in the record ``folder`` it was read from: by default
    the model's), a finite main score in [-1, 1]."""
    if not isinstance(raw, dict):
        return f"expected a JSON object, found {type(raw).__name__}"
    for name, kind in FIELD_TYPES.items():
        if not isinstance(raw.get(name), kind):
            return f"field {name!r} is missing or not a {kind.__name__}"
    score = raw.get("main_score")
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        return "field 'main_score' is missing or not a number"
    if not -1.0 <= score <= 1.0:  # NaN and inf too; a comparison, as math.isfinite raises on a 400-digit integer
        return f"main score {shown_number(score)} is not a finite fraction in [-1, 1]"
    if raw["key"] != record_key(raw["task"], raw["encoder"], raw["protocol"]):
        return "its key does not match its task, encoder and protocol"
    inconsistent = score_problem(raw)
    if inconsistent is not None:
        return inconsistent
    for name, want in (("task", task), ("key", key)):
        if want is not None and raw[name] != want:
            return f"its {name} is {raw[name]!r}, its file name says {want!r}"
    # its model's name must be one that gave the folder it is read from; not slug() of it now: a relative path, stored
    # from another working folder, reads as another name from this one (the model's weights are in the key)
    if model is not None and (folder := folder or slug(model)) not in _folders_of(raw["model"]):
        return f"its model is {raw['model']!r}, its folder says {folder!r}"
    return None


_NAMED: set[str] = set()  # invalid record files already named in this process


def _name_once(path: Path, problem: str, then: str) -> None:
    if str(path) not in _NAMED:
        _NAMED.add(str(path))
        warnings.warn(f"ignoring result record {path}: {problem}; {then}", stacklevel=3)


def read_record(path: Path, model: str | None = None, task: str | None = None, key: str | None = None,
                then: str = "it is computed again") -> Record | None:
    """The record in ``path`` when it checks out; otherwise None, with the file named once and ``then`` (what
    becomes of its result: a run computes it again, a listing leaves it out)."""
    try:
        raw = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError, RecursionError) as e:  # ValueError: JSONDecodeError, UnicodeDecodeError, an integer of 4300+ digits
        _name_once(path, f"cannot read it ({type(e).__name__})", then)
        return None
    problem = record_problem(raw, model, task, key, path.parent.name)
    if problem is not None:
        _name_once(path, problem, then)
        return None
    return Record.from_dict(raw)


API_RESULTS = Path("~/.cache/embench/results")  # the Python API's default (as mteb keeps its results in a cache)
CLI_RESULTS = Path("results")  # the command line's default: a project's ./results, which `report` reads


def default_results_dir(cli: bool = False) -> Path:
    """``$EMBENCH_RESULTS``, else ``./results`` for the command line and ``~/.cache/embench/results`` for the
    Python API: a notebook's quick experiments do not land in the folder a project's paper tables are made from."""
    raw = os.environ.get("EMBENCH_RESULTS")
    return Path(raw) if raw else (CLI_RESULTS if cli else API_RESULTS.expanduser())


class ResultStore:
    """A folder of result records: ``<root>/<model>/<task>-<key>.json``."""

    def __init__(self, root: Path | str | None = None):
        self.root = Path(root) if root is not None else default_results_dir()

    def path(self, record_or_model: Record | str, task: str | None = None, key: str | None = None) -> Path:
        if isinstance(record_or_model, Record):
            r = record_or_model
            record_or_model, task, key = r.model, r.task, r.key
        return self.root / slug(record_or_model) / plain_name(f"{task}-{key}.json", "result record")

    def find(self, model: str, task: str, key: str, folder: str | None = None) -> Record | None:
        """``folder``: the model's record folder when known (a grid's, fixed at planning), else slug(model) now."""
        p = self.root / plain_name(folder, "record folder") / plain_name(f"{task}-{key}.json", "result record") \
            if folder else self.path(model, task, key)
        if p.is_file():
            return read_record(p, model, task, key)  # a damaged file is redone, not trusted
        return _keyed_before_its_data(p.parent, task, key)  # a task file's record from before its data was in the key

    def check_writable(self) -> None:
        """Called before any encoding, so an unwritable results folder stops a run before work is done."""
        if self.root.exists() and not self.root.is_dir():
            raise EmbenchError(f"results folder {self.root} is a file, not a folder; choose another --results-dir "
                               "(or EMBENCH_RESULTS)")
        e = unwritable(self.root)
        if e is not None:
            raise EmbenchError(f"cannot write result records to {self.root} ({e.strerror or e}); "
                               "choose another --results-dir (or EMBENCH_RESULTS)") from None
        sweep_stale(self.root, f"*/.*{TMP_SUFFIX}")  # what a run killed mid-write left: records and items

    def items_path(self, record: Record) -> Path:
        return self.path(record).with_suffix(".items.npz")

    def save(self, record: Record, items: Items | None = None) -> Path:
        """Write the record and its per-item outcomes as a pair: the items under a temporary name first, renamed into
        place once the record is. A failed write (a full disk) leaves the pair there before as it was (replacing the
        items first, then removing them, left the old record naming a missing file: ``--ci`` silently scored again),
        and Ctrl-C or SIGTERM meanwhile takes effect once both are written."""
        p = self.path(record)
        p.parent.mkdir(parents=True, exist_ok=True)
        with interrupts_held(), contextlib.ExitStack() as pair:
            if items is not None:  # renamed over the old items when the block ends, removed if it raises
                staged = pair.enter_context(atomic_path(self.items_path(record)))
                record.items = {**items.describe(), "file": self.items_path(record).name, "sha256": items.save(staged)}
            return write_json(p, record.to_dict(), default=_json_default)

    def load_items(self, record: Record) -> Items | None:
        """The record's per-item outcomes, or None when it has none or the file is missing or damaged."""
        if not record.items:
            return None
        path = self.items_path(record)
        try:
            data = path.read_bytes()  # read once: the bytes checked are the bytes loaded, whoever replaces the file
            if hashlib.sha256(data).hexdigest() != record.items.get("sha256"):
                log.warning("%s does not match the checksum in its record; the task will be scored again", path)
                return None
            return Items.load(io.BytesIO(data))
        except (OSError, ValueError, KeyError) as exc:
            log.warning("%s cannot be read (%s); the task will be scored again", path, exc)
            return None

    def records(self, model: str | None = None, task: str | None = None) -> list[Record]:
        """Every stored record, optionally filtered by model name (substring) and task."""
        out = []
        if not self.root.is_dir():
            return out
        for p in sorted(self.root.glob("*/*.json")):
            r = read_record(p, then="it is left out (a run of its task computes it again)")
            if r is None:
                continue
            if model and model.lower() not in r.model.lower():
                continue
            if task and task.lower() != r.task.lower():
                continue
            out.append(r)
        return out


def _keyed_before_its_data(folder: Path, task: str, key: str) -> Record | None:
    """The record of task file ``task`` in a model's ``folder`` stored without ``task_data`` (evaluation/task_data.py)
    whose key, with the digest of the checksums its provenance names added, is ``key``: the same task, encoder,
    protocol and data files. None when there is none."""
    for path in sorted(folder.glob(f"{glob.escape(task)}-*.json")) if folder.is_dir() else ():
        stem = path.name.removesuffix(".json")
        if not (stem.startswith(task + "-") and KEY.fullmatch(stem[len(task) + 1:])):
            continue  # another task's whose name begins with this one's
        try:
            raw = path.read_bytes()
        except OSError:
            continue
        if b'"task_file"' not in raw or b'"task_data"' in raw:  # not a task file's record, or keyed by its data already
            continue
        record = read_record(path, task=task)
        files = ((record.provenance or {}).get("data_files") or {}) if record is not None else {}
        if files and TASK_DATA not in record.protocol and record_key(
                task, record.encoder, {**record.protocol, TASK_DATA: data_digest(files.values())}) == key:
            return record
    return None


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
