"""Tables written as JSON keep every float exactly (pandas' to_json wrote a Steiger p of 9.47e-14 as 0.0)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from embench.report.json_records import frame_records, plain
from embench.report.tables import render


def test_json_tables_keep_small_p_values_and_every_digit():
    frame = pd.DataFrame({"test": ["steiger", "permutation", "bootstrap"], "p": [9.47e-14, 3.5006e-08, 0.12345678901234567],
                          "n": np.array([1379, 12, 5], dtype=np.int64)}).set_index("test")
    rows = json.loads(render(frame, "json"))
    assert [r["p"] for r in rows] == [9.47e-14, 3.5006e-08, 0.12345678901234567]
    assert rows[0] == {"test": "steiger", "p": 9.47e-14, "n": 1379}


def test_non_finite_and_numpy_values_become_json():
    frame = pd.DataFrame({"a": [math.nan, math.inf, np.float32(0.5)], "b": [pd.NaT, pd.Timestamp("2026-11-28"), None]})
    rows = frame_records(frame)
    assert rows[0]["a"] is None and rows[1]["a"] is None and rows[2]["a"] == 0.5
    assert rows[0]["b"] is None and rows[1]["b"].startswith("2026-11-28") and rows[2]["b"] is None
    json.dumps(rows, allow_nan=False)  # strict JSON: no NaN token
    assert plain({"x": (np.int64(3), np.bool_(True))}) == {"x": [3, True]}
