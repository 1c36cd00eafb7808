"""A training recipe run under several seeds, kept as one model: ``OUT/seeds.json`` lists its members.

``embench train ... --seeds 1-5 --out OUT`` trains ``OUT/seed-1`` ... ``OUT/seed-5`` and writes the
list; ``embench run --model OUT`` and ``embench compare --model OUT ...`` then read OUT as one model
whose score is the mean (and spread) over its seeds.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.atomic import write_json
from ..core.errors import EmbenchError

SEED_GROUP_FILE = "seeds.json"


@dataclass
class SeedGroup:
    name: str
    folder: Path
    members: dict[int, Path]  # seed -> model folder
    missing: dict[int, Path] = field(default_factory=dict)  # listed, but the folder is gone (a lenient read)

    @property
    def seeds(self) -> list[int]:
        return sorted(self.members)

    @property
    def key(self) -> str:
        """The group's key in an evaluation: its folder, resolved; ``name`` (the folder's last part) is shared by
        ``runs/bert/simcse`` and ``runs/roberta/simcse``, whose seeds merged into one row under it."""
        return str(self.folder.resolve())


def short_names(keys: Sequence[str]) -> dict[str, str]:
    """Each group key (a path) as its shortest ending that no other key ends with: ``simcse`` alone,
    ``bert/simcse`` and ``roberta/simcse`` side by side (a table's rows must tell them apart)."""
    parts = {k: Path(k).parts or (k,) for k in keys}
    out = {}
    for key, own in parts.items():
        n = 1
        while n < len(own) and any(o != own and o[-n:] == own[-n:] for o in parts.values()):
            n += 1
        out[key] = str(Path(*own[-n:]))
    return out


def parse_seeds(spec: str | int | list) -> list[int]:
    """``"1-5"``, ``"1,3,7"``, ``"1-3,10"`` or a list: the seeds, in order, without repeats."""
    if isinstance(spec, int):
        return [spec]
    if isinstance(spec, (list, tuple)):
        return list(dict.fromkeys(int(s) for s in spec))
    out: list[int] = []
    for part in str(spec).split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m or (m.group(2) and int(m.group(2)) < int(m.group(1))):
            raise EmbenchError(f"--seeds {spec!r}: give seeds as 1-5, 1,3,7 or 1-3,10")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        out += range(lo, hi + 1)
    return list(dict.fromkeys(out))


def read_seed_group(spec: str | Path, lenient: bool = False) -> SeedGroup | None:
    """The seed group stored in folder ``spec``, or None when ``spec`` is not one. A member whose folder is gone is an
    error (a mean over the others would pass for the group's), unless ``lenient`` (training, which trains it again):
    then it is left out, in ``missing``, and a group with no member left is returned empty."""
    folder = Path(spec).expanduser()
    path = folder / SEED_GROUP_FILE
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text())
        members = {int(seed): folder / rel for seed, rel in raw["members"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise EmbenchError(f"{path}: not a readable seed group ({exc})") from None
    missing = {s: p for s, p in members.items() if not p.is_dir()}
    if missing and not lenient:
        seeds = ",".join(map(str, missing))
        raise EmbenchError(f"{path}: member folder(s) missing: {', '.join(map(str, missing.values()))}; run the train "
                           f"command of the group again with the same --seeds (or --seeds {seeds}) to train the "
                           f"missing seed(s) again: the finished seeds are kept")
    if not members and not lenient:
        raise EmbenchError(f"{path}: no finished seed yet")
    return SeedGroup(name=folder.name or str(folder), folder=folder,
                     members={s: p for s, p in members.items() if s not in missing}, missing=missing)


def write_seed_group(folder: Path, members: dict[int, Path], config: dict[str, Any]) -> Path:
    """Record the finished seeds (paths relative to ``folder``) and the shared configuration, atomically."""
    path = folder / SEED_GROUP_FILE
    body = {"members": {str(s): os.path.relpath(p, folder) for s, p in sorted(members.items())}, "config": config}
    return write_json(path, body)
