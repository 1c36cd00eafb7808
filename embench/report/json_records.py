"""A table's rows as JSON at full precision.

pandas' ``to_json`` writes floats with 10 decimals (15 at most), in fixed notation down to 1e-16: a Steiger
p of 9.47e-14 came out as ``0.0``, 3.5006e-08 as ``0.000000035``. Rows go through Python's ``json`` here
instead, which writes every float as the shortest text that reads back to the same number; NaN and
infinities (not JSON) become ``null``, numpy scalars their Python values, anything else its text.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd


def plain(value: Any) -> Any:
    """``value`` as JSON can hold it (see the module's docstring)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if pd.isna(value) is True:  # NaT, pd.NA
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def frame_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Every row of ``frame`` (its index left out: ``reset_index()`` first to keep it) as a dict of plain values."""
    return [{str(k): plain(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]


def frame_json(frame: pd.DataFrame, indent: int | None = 2) -> str:
    return json.dumps(frame_records(frame), indent=indent)
