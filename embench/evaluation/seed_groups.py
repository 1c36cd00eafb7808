"""A training recipe run under several seeds, kept as one model: ``OUT/seeds.json`` lists its members.

``embench train ... --seeds 1-5 --out OUT`` trains ``OUT/seed-1`` ... ``OUT/seed-5`` and writes the
list; ``embench run --model OUT`` and ``embench compare --model OUT ...`` then read OUT as one model
whose score is the mean (and spread) over its seeds.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
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

    @property
    def seeds(self) -> list[int]:
        return sorted(self.members)


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


def read_seed_group(spec: str | Path) -> SeedGroup | None:
    """The seed group stored in folder ``spec``, or None when ``spec`` is not one."""
    folder = Path(spec).expanduser()
    path = folder / SEED_GROUP_FILE
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text())
        members = {int(seed): folder / rel for seed, rel in raw["members"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise EmbenchError(f"{path}: not a readable seed group ({exc})") from None
    missing = [str(p) for p in members.values() if not p.is_dir()]
    if missing:
        raise EmbenchError(f"{path}: member folder(s) missing: {', '.join(missing)}")
    if not members:
        raise EmbenchError(f"{path}: no finished seed yet")
    return SeedGroup(name=folder.name or str(folder), folder=folder, members=members)


def write_seed_group(folder: Path, members: dict[int, Path], config: dict[str, Any]) -> Path:
    """Record the finished seeds (paths relative to ``folder``) and the shared configuration, atomically."""
    path = folder / SEED_GROUP_FILE
    body = {"members": {str(s): os.path.relpath(p, folder) for s, p in sorted(members.items())}, "config": config}
    return write_json(path, body)
