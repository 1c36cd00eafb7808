"""Option values given as text (``analyze --set``, the trainer's ``--eval-analysis``), typed after a default.

Light on purpose: the CLI imports it while building ``--help``, before any heavy library.
"""

from __future__ import annotations

import contextlib
from typing import Any

from .errors import EmbenchError

# the words a yes/no option takes, in any case: every command's --set and a training config file read them alike
TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")
YES_NO = "true or false (or yes/no, on/off, 1/0)"


def as_bool(value: Any) -> bool | None:
    """``value`` as a yes/no answer: a bool, the integer 1 or 0, or one of ``TRUE_WORDS``/``FALSE_WORDS`` in any
    case; None for anything else (``"maybe"``, ``2``), which the caller refuses naming its option: any non-empty
    string counting as true made ``--set select_initial=False`` turn the option on."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in TRUE_WORDS + FALSE_WORDS:
        return value.strip().lower() in TRUE_WORDS
    return None


def parse_value(raw: str, default: Any) -> Any:
    """An option value given as text (``--set``, ``--eval-analysis``), typed after the option's default
    (tuple defaults take comma lists)."""
    if isinstance(default, tuple) or (default is None and "," in raw):
        return [parse_value(x.strip(), None) for x in raw.split(",") if x.strip()]
    if isinstance(default, bool) or raw.lower() in ("true", "false"):
        answer = as_bool(raw)
        if answer is None:
            raise EmbenchError(f"--set value {raw!r} must be {YES_NO}")
        return answer
    if raw.lower() == "none":
        return None
    for kind in (int, float):
        with contextlib.suppress(ValueError):
            return kind(raw)
    return raw
