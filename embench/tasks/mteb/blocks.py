"""MTEB block averages, as the cropping paper reports them (Table 1, §3.2.1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def block_averages(records: Sequence[Any]) -> Any:
    """Per model: the mean main score of each MTEB task type, then ``Block avg.``, the mean of those means.

    The cropping paper (Table 1) averages within each task type (clustering, reranking, retrieval,
    STS, classification, ...) and then across types, each type weighted 1/n_types. A row that
    misses a type of another row gets no block average (NaN). Fractions, not x100.
    """
    import pandas as pd

    rows: dict[str, dict[str, list[float]]] = {}
    types: list[str] = []
    mteb_records = [r for r in records if (r.scores or {}).get("mteb_type") is not None]
    norms: dict[str, set] = {}
    for r in mteb_records:
        norms.setdefault(r.model, set()).add((r.encoder or {}).get("normalize"))
    for r in mteb_records:
        kind = r.scores["mteb_type"]
        if kind not in types:
            types.append(kind)
        label = r.model
        if len(norms[r.model]) > 1:  # the same model with and without normalisation: two rows
            label += " (normalised)" if (r.encoder or {}).get("normalize") else " (unnormalised)"
        rows.setdefault(label, {}).setdefault(kind, []).append(float(r.main_score))
    frame = pd.DataFrame({m: {t: sum(v) / len(v) for t, v in d.items()} for m, d in rows.items()}).T
    frame = frame.reindex(columns=types)
    frame["Block avg."] = frame.mean(axis=1, skipna=False)
    frame["Task avg."] = pd.Series({m: sum(sum(v) for v in d.values()) / sum(len(v) for v in d.values()) for m, d in rows.items()})
    frame.index.name = "model"
    return frame
