"""What :func:`embench.evaluate` returns: the records, how each was obtained, and the tables a user reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..encoding.vector_axes import suffix
from ..report.counts import counted
from ..report.tables import breakdown_frame, column_names, csv_with_notes, render, summary_frame
from ..stats.bootstrap import AGGREGATIONS  # the rows breakdown_frame adds after a task's subsets
from .items import Items
from .results import Record
from .seed_groups import short_names
from .significance import IntervalSettings


@dataclass
class Evaluation:
    """What :func:`evaluate` returns: the records, how each was obtained, and tables of them.

    ``status`` says how each record was obtained (``"computed"`` or ``"stored"``) and ``unsaved`` why a record could
    not be saved, both by the record's :meth:`key`: its task's name (``{"STSBenchmark": "stored"}``), and where a run
    scores several dimension/precision rows per task (``truncate_dim=[384, 64]``, ``quantize=[...]``) the name with
    the row's suffix, as the table names the row (``{"STSBenchmark (dim 384)": "stored", "STSBenchmark (dim 64)":
    "computed"}``).
    """

    records: list[Record]
    status: dict[str, str] = field(default_factory=dict)  # key(record) -> "computed" | "stored"
    view: str = "summary"
    encode_stats: dict[str, Any] = field(default_factory=dict)
    unsaved: dict[str, str] = field(default_factory=dict)  # key(record) -> why it could not be saved
    axis_rows: bool = False  # several dimension/precision rows per task: status and unsaved keyed by row
    items: dict[tuple[str, str], Items] = field(default_factory=dict)  # (model, task) -> per-item outcomes
    intervals: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)  # (model, column) -> (low, high)
    interval_settings: IntervalSettings | None = None
    seed_groups: dict[str, list[str]] = field(default_factory=dict)  # group key (SeedGroup.key) -> members' model names
    per_seed: bool = False  # show each seed's row under its group's mean
    labels: dict[str, str] = field(default_factory=dict)  # model name -> display name of its row (run --label)

    def key(self, record: Record) -> str:
        """``record``'s key in :attr:`status` and :attr:`unsaved`: its task's name, with its row's suffix
        (`` (dim 64, int8)``) where the run scores several dimension/precision rows per task."""
        return record.task + (suffix(record.encoder) if self.axis_rows else "")

    @classmethod
    def merge(cls, evaluations: Sequence[Evaluation], view: str = "summary") -> Evaluation:
        """Several models' evaluations as one table."""
        out = cls(records=[], view=view)
        for ev in evaluations:
            out.records += ev.records
            out.items.update(ev.items)
            out.intervals.update(ev.intervals)
            out.interval_settings = out.interval_settings or ev.interval_settings
            out.seed_groups.update(ev.seed_groups)
            out.per_seed = out.per_seed or ev.per_seed
            out.labels.update(ev.labels)
            out.unsaved.update(ev.unsaved)
        return out

    def seed_scores(self, group: str) -> dict[str, list[float]]:
        """Column -> every seed's score (``Avg.`` too) of a seed group (its folder as given, resolved, or as the table
        names it), or of a single model (one score each)."""
        key = next((k for k in (group, str(Path(group).expanduser().resolve())) if k in self.seed_groups), None)
        key = key or next((k for k in self.seed_groups if self.group_name(k) == group), group)
        frame = summary_frame(self.records)
        rows = frame.loc[self.seed_groups.get(key, [key])]
        return {c: rows[c].tolist() for c in frame.columns}

    @property
    def frame(self) -> pd.DataFrame:
        """One row per model, tasks as columns, then Avg. (fractions, not x100); a seed group is one row,
        the mean over its seeds (their rows kept above it with ``per_seed``)."""
        frame = summary_frame(self.records)
        order = list(frame.index)
        for name, members in self.seed_groups.items():
            mean = frame.loc[members].mean(axis=0)
            if not self.per_seed:
                frame = frame.drop(index=members)
            frame.loc[self.group_label(name)] = mean
        return frame.loc[self._row_order(order)].rename(index=self.labels)

    def _row_order(self, rows: list[str]) -> list[str]:
        """The rows in the models' order, a group's row where its last seed is (it went below every model after it)."""
        out = []
        for row in rows:
            groups = [name for name, members in self.seed_groups.items() if row in members]
            if self.per_seed or not groups:
                out.append(row)
            out += [self.group_label(g) for g in groups if row == max(self.seed_groups[g], key=rows.index)]
        return out

    def group_label(self, key: str) -> str:
        """A group's row: its label (``run --label``) or name, then how many seeds its mean is over."""
        return f"{self.group_name(key)} (mean of {counted(len(self.seed_groups[key]), 'seed')})"

    def group_name(self, key: str) -> str:
        """A group's label, else the shortest ending of its folder that no other group's shares."""
        return self.labels.get(key) or short_names([k for k in self.seed_groups if k not in self.labels]).get(key, key)

    @property
    def spreads(self) -> dict[tuple[str, str], float]:
        """(group row, column) -> the standard deviation over the group's seeds (of two or more: one has none)."""
        frame = summary_frame(self.records)
        return {(self.group_label(name), c): float(v) for name, members in self.seed_groups.items() if len(members) > 1
                for c, v in frame.loc[members].std(axis=0, ddof=1).items()}

    @property
    def breakdown(self) -> pd.DataFrame:
        """Every subset with its all/mean/wmean rows; a task of one subset (STS-B, SICK-R) shows that row
        alone, since its three aggregates repeat it. The model column names each row as :attr:`frame` does."""
        frame = breakdown_frame(self.records)
        if "model" in frame.columns:  # a label (run --label) names the model's rows here too, not its own name
            frame["model"] = frame["model"].map(lambda m: self.labels.get(m, m))
        if frame.empty or "subset" not in frame.columns:
            return frame
        aggregate = frame["subset"].isin(AGGREGATIONS)
        parts = (~aggregate).groupby([frame["model"], frame["task"]]).transform("sum")
        return frame[~(aggregate & (parts == 1))].reset_index(drop=True)

    def render(self, fmt: str = "table") -> str:
        if fmt == "json":
            return self.to_json()
        if self.view == "breakdown":
            return render(self.breakdown, fmt, scaled=["pearson", "spearman"])
        note = self.interval_note()
        if self.seed_groups:
            note = "; ".join(filter(None, [note, "seed groups: mean +- sample standard deviation over seeds"]))
        # several models: best bold, second underlined
        intervals = {(self.labels.get(m, m), c): iv for (m, c), iv in self.intervals.items()}
        if fmt == "csv":  # render drops a note in CSV: it comes as rows of its own, saying how the intervals were drawn
            text = render(self.frame, fmt, intervals=intervals or None, spreads=self.spreads or None)
            return csv_with_notes(text, [note] if note else [], "scores")
        return render(self.frame, fmt, highlight=True, intervals=intervals or None, note=note,
                      spreads=self.spreads or None)

    def to_json(self) -> str:
        """The table as JSON that says what it holds: the scale of the scores, each column's metric, and the
        protocol (once when every record shares it, else per model and task), then the rows."""
        import json

        if self.view == "breakdown":
            rows = json.loads(render(self.breakdown, "json"))
        else:
            intervals = {(self.labels.get(m, m), c): iv for (m, c), iv in self.intervals.items()}
            rows = json.loads(render(self.frame, "json", intervals=intervals or None, spreads=self.spreads or None))
        protocols = {(r.model, r.display): r.protocol for r in self.records}
        distinct = {json.dumps(p, sort_keys=True) for p in protocols.values()}
        out: dict[str, Any] = {
            "scale": "fractions: 0.8203 is printed 82.03 in the tables (x100)",
            "metrics": column_metrics(self.records),
        }
        if len(distinct) <= 1:
            out["protocol"] = next(iter(protocols.values()), {})
        else:
            out["protocols"] = {f"{m} / {t}": p for (m, t), p in protocols.items()}
        if self.interval_settings is not None:
            out["intervals"] = self.interval_note()
        out["rows"] = rows
        return json.dumps(out, indent=2)

    def interval_note(self) -> str | None:
        """The footnote of a table with intervals: how they were drawn, and which scores have none."""
        if self.interval_settings is None:
            return None
        missing = sorted({r.display for r in self.records if (r.model, r.display) not in self.intervals})
        note = self.interval_settings.describe()
        if missing:
            note += f"; no interval for {', '.join(missing)} (no per-item outcomes: mteb scores those tasks internally)"
        if self.seed_groups:  # a group's row is its seeds' mean ± std; each seed's record keeps its own interval
            note += (f"; a seed group's row ({', '.join(map(self.group_name, self.seed_groups))}) is the mean ± std over its seeds, without an "
                     "interval: `embench compare` draws one over seeds and items")
        return note


def column_metrics(records: Sequence[Record]) -> dict[str, str]:
    """What each column's scores measure (:func:`metric_of`), by the column's name as the tables print it
    (:func:`~embench.report.tables.column_names`): ``run`` and ``results show`` say it alike in JSON."""
    return {column: metric_of(r) for r, column in zip(records, column_names(records), strict=True)}


def metric_of(record: Record) -> str:
    """What a record's main score measures, in words."""
    p = record.protocol
    if record.kind == "sts":
        return f"{p.get('correlation')} correlation of {p.get('similarity')} similarities with the gold scores"
    if record.kind == "transfer":
        return "test accuracy of a classifier on frozen embeddings"
    return f"mteb's main score ({(record.scores or {}).get('main_score_name', 'main_score')})"
