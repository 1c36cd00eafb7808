"""What a checkpoint embench trained says of itself (``embench_training.json``): the pooling, prompt and attention
it was trained with, which loading it keeps unless an option says otherwise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .st_folder import read_json


def trained_setting(folder: Path | None, key: str) -> Any:
    """``key`` of the training record in ``folder``; None where there is none (no folder, no record, no key)."""
    meta = folder / "embench_training.json" if folder is not None else None
    return read_json(meta).get(key) if meta is not None and meta.is_file() else None


def trained_prompt(folder: Path | None) -> str:
    return str(trained_setting(folder, "prompt") or "")
