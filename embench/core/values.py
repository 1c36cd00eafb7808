"""Option values given as text (``analyze --set``, the trainer's ``--eval-analysis``), typed after a default.

Light on purpose: the CLI imports it while building ``--help``, before any heavy library.
"""

from __future__ import annotations

import contextlib
from typing import Any

from .errors import EmbenchError


def parse_value(raw: str, default: Any) -> Any:
    """An option value given as text (``--set``, ``--eval-analysis``), typed after the option's default
    (tuple defaults take comma lists)."""
    if isinstance(default, tuple) or (default is None and "," in raw):
        return [parse_value(x.strip(), None) for x in raw.split(",") if x.strip()]
    if isinstance(default, bool) or raw.lower() in ("true", "false"):
        if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
            raise EmbenchError(f"--set value {raw!r} must be true or false")
        return raw.lower() in ("true", "1", "yes")
    if raw.lower() == "none":
        return None
    for kind in (int, float):
        with contextlib.suppress(ValueError):
            return kind(raw)
    return raw
