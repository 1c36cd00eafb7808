"""Paper tables from result records: one row per model, tasks as columns, ``Avg.`` recomputed, and the
protocol of every number kept with the table (never two protocols mixed silently in one table).

Records are read by their fields only (``task``, ``display``, ``kind``, ``model``, ``main_score``,
``protocol``, ``encoder``): this layer imports nothing of the evaluation layer above it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..core.errors import EmbenchError, UnknownNameError
from ..core.identity_fields import ENCODER_FIELDS, OPTIONAL_FIELDS, comparable, shown
from ..core.registry import nearest
from .counts import counted
from .model_match import model_labels
from .protocol_groups import AxesOf, agrees, applies_to, row_keys, scored_protocol

# Encoder settings that make two rows of the same model different models in a table.
ROW_FIELDS = tuple(f for f in (*ENCODER_FIELDS, *OPTIONAL_FIELDS) if f != "fingerprint")  # a record's identity
# ... and other weights under one name (two folders called tinybert): rows apart, as `results show` keeps them
LABEL_FIELDS = ("fingerprint", *ROW_FIELDS)


class ProtocolMixError(EmbenchError):
    """Records of one kind of task under different protocols were asked into one table."""


@dataclass
class PaperTable:
    """One table: ``frame`` holds fractions (rows: display names; columns: task display names, ``Avg.``)."""

    kind: str
    frame: pd.DataFrame
    protocol: dict[str, Any]
    encoders: dict[str, dict[str, Any]] = field(default_factory=dict)  # row -> encoder settings
    caption: str = ""
    lower_is_better: frozenset[str] = frozenset()
    # row -> its protocol (``split="rows"``): best and second are marked among the rows of one protocol only, as
    # a Pearson row and a Spearman row are not competing numbers
    row_groups: dict[str, str] = field(default_factory=dict)
    applies: dict[str, str] = field(default_factory=dict)  # axis -> the columns it applies to, where not all of them

    def groups(self) -> list[str | None]:
        """The protocol group of each row of ``frame``, in order (None for all when the table has one protocol)."""
        return [self.row_groups.get(row) for row in self.frame.index]

    def note(self) -> str:
        """The footnote: the protocol of every number in the table, then each row's encoder settings."""
        proto = ", ".join(f"{k}={v}" + (f" ({self.applies[k]})" if k in self.applies else "")
                          for k, v in self.protocol.items()) or "as stored"
        shown = {row: ", ".join(f"{k}={v}" for k, v in enc.items() if v not in (None, "")) for row, enc in self.encoders.items()}
        if len(shown) > 1 and len(set(shown.values())) == 1:  # one encoder setting for every row: said once
            rows = f"every row: {next(iter(shown.values()))}"
        else:
            rows = "; ".join(f"{row}: {enc}" for row, enc in shown.items())
        return f"Protocol ({self.kind}): {proto}. Scores x100; Avg. over the columns shown." + (f" Encoders: {rows}." if rows else "")


def _row_labels(records: Sequence[Any], names: Mapping[str, str]) -> dict[int, str]:
    """A display label per record: the given name of its model (or the model name), plus the encoder
    settings that differ between rows of the same model, so that two poolings (or two fingerprints) stay two rows."""
    by_model: dict[str, set[tuple]] = {}
    for r in records:
        by_model.setdefault(r.model, set()).add(tuple(comparable(r.encoder.get(f)) for f in LABEL_FIELDS))
    labels, named = {}, model_labels(by_model, names)  # --name as -m matches a model (./tiny-bert or tiny-bert)
    for i, r in enumerate(records):
        base = named[r.model]
        variants = by_model[r.model]
        if len(variants) > 1:
            differing = [f for j, f in enumerate(LABEL_FIELDS) if len({v[j] for v in variants}) > 1]
            base += " (" + ", ".join(f"{f}={shown(f, r.encoder.get(f))}" for f in differing) + ")"
        labels[i] = base
    owners: dict[str, set[str]] = {}
    for i, r in enumerate(records):
        owners.setdefault(labels[i], set()).add(r.model)
    for label, models in owners.items():  # one row of two models' cells, averaged across both, was printed
        if len(models) > 1:
            raise EmbenchError(f"--name gives {len(models)} models the row label {label!r} ({', '.join(sorted(models))}); "
                               "give each model its own name")
    return labels


def _as_model(record: Any, model: str) -> Any:
    """``record`` under the model name ``model`` (a copy: the caller's records are left as read)."""
    if record.model == model:
        return record
    renamed = copy.copy(record)
    renamed.model = model
    return renamed


def _by_kind(records: Iterable[Any]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for r in records:
        out.setdefault(r.kind, []).append(r)
    return out


def _protocol_groups(recs: Sequence[Any], axes_of: AxesOf | None) -> tuple[dict[tuple, list[Any]], dict[str, str]]:
    """Records of one kind by protocol: a group per most specific combination of the axes on which they differ, each
    record in every group it agrees with on the axes both are scored under; each group's protocol names every axis of
    the kind (as scored where some record is, else as stored). Also the axes that apply to some columns only."""
    protos = [scored_protocol(r, axes_of) for r in recs]
    axes = list(dict.fromkeys(a for p in protos for a in p))
    differing = [a for a in axes if len({repr(p[a]) for p in protos if p.get(a) is not None}) > 1]
    values = [tuple(p.get(a) for a in differing) for p in protos]
    groups: dict[tuple, list[Any]] = {}
    for _, *key in row_keys([("", v) for v in values]):
        inside = [i for i, v in enumerate(values) if agrees(v, tuple(key))]
        proto = {a: next((protos[i][a] for i in inside if protos[i].get(a) is not None), recs[inside[0]].protocol.get(a))
                 for a in axes}
        groups[tuple(proto.items())] = [recs[i] for i in inside]
    return groups, applies_to(recs, protos)


def _differing(groups: Iterable[tuple]) -> list[str]:
    """The protocol axes that tell ``groups`` (protocols, as :func:`_protocol_groups` keys them) apart."""
    protos = [dict(p) for p in groups]
    return [a for a in protos[0] if len({str(p.get(a)) for p in protos}) > 1]


def _describe_mix(kind: str, groups: Mapping[tuple, list[Any]]) -> str:
    differing = _differing(groups)
    parts = []
    for proto, recs in groups.items():
        where = sorted({f"{r.model}/{r.task}" for r in recs})
        shown = ", ".join(f"{a}={dict(proto)[a]}" for a in differing)
        parts.append(f"  {shown}: {counted(len(recs), 'record')}, e.g. {', '.join(where[:3])}")
    return (f"the {kind} records asked for were made under {len(groups)} protocols (they differ in "
            f"{', '.join(differing)}):\n" + "\n".join(parts) +
            "\nchoose one with --model/--task, or pass --split tables (a table per protocol) or --split rows (a row per model and protocol)")


KIND_NAMES = {"sts": "STS", "mteb": "MTEB"}  # how a caption names a kind of task ("7 transfer tasks", not TRANSFER)
SPLITS = ("tables", "rows")  # how records of several protocols are shown: a table each, or a row each


def paper_tables(records: Iterable[Any], names: Mapping[str, str] | None = None, split: str | None = None,
                 lower_is_better: Iterable[str] = (), caption: str | None = None,
                 model_order: Sequence[str] = (), axes_of: AxesOf | None = None,
                 model_of: Callable[[str], str] | None = None) -> list[PaperTable]:
    """One table per kind of task (STS, transfer, MTEB); records of one kind under several protocols
    are split as asked: ``split="tables"`` gives one table per protocol, ``split="rows"`` one row per
    model and protocol with the differing axes in the row's name (SimCSE Table B.2's layout).

    Raises :class:`ProtocolMixError` when records of one kind differ in a protocol axis that changes
    their numbers and ``split`` is None. Columns keep the order in which they first appear; rows too, except that the
    rows of ``model_order``'s models (as stored) come first, in its order (``report -m``: rows in the order of colours).
    ``axes_of`` (a record -> the axes its task is scored under; default: every axis of its kind) keeps an axis a
    record's task ignores (STS13's ``sick_split``, stored at its default) from setting it apart from the others.
    ``model_of`` (a stored model name -> the model it is a row of) makes an alias and its hub id one row, as
    `results show` has them (their weights told apart by the fingerprint, as any model's are).
    """
    names, lower_is_better = dict(names or {}), tuple(lower_is_better)
    if model_of is not None:
        records = [_as_model(r, model_of(r.model)) for r in records]
        model_order = list(dict.fromkeys(model_of(m) for m in model_order))
    by_kind: dict[str, dict[tuple, list[Any]]] = {}
    applies: dict[str, dict[str, str]] = {}
    for kind, recs in _by_kind(records).items():
        by_kind[kind], applies[kind] = _protocol_groups(recs, axes_of)
    tables = []
    for kind, groups in by_kind.items():
        groups = dict(sorted(groups.items(), key=lambda kv: str(kv[0])))  # protocols in a stable order
        if len(groups) > 1 and split not in SPLITS:
            raise ProtocolMixError(_describe_mix(kind, groups))
        suffix: dict[tuple, str] = {}
        differing = _differing(groups)
        # (record, its group's protocol): a record not scored under a differing axis stands in each group it agrees with
        members = {p: [(r, p) for r in recs] for p, recs in groups.items()}
        if len(groups) > 1 and split == "rows":
            suffix = {p: " (" + ", ".join(f"{a}={dict(p)[a]}" for a in differing) + ")" for p in groups}
            shared = tuple((a, v) for a, v in next(iter(groups)) if a not in differing)
            members = {shared: [m for ms in members.values() for m in ms]}
            groups = {shared: [r for r, _ in members[shared]]}
        for proto, recs in groups.items():
            labels = _row_labels(recs, names)
            row_groups = {}
            if suffix:
                labels = {i: labels[i] + suffix[p] for i, (_, p) in enumerate(members[proto])}
                row_groups = {labels[i]: suffix[p].strip(" ()") for i, (_, p) in enumerate(members[proto])}
            columns: list[str] = []
            cells: dict[str, dict[str, float]] = {}
            encoders: dict[str, dict[str, Any]] = {}
            for i, r in enumerate(recs):
                if r.display not in columns:
                    columns.append(r.display)
                row = cells.setdefault(labels[i], {})
                if r.display in row and row[r.display] != r.main_score:
                    raise EmbenchError(f"two records of {labels[i]} on {r.display} under one protocol disagree "
                                       f"({row[r.display]:.4f} vs {r.main_score:.4f}): give one results folder")
                row[r.display] = r.main_score
                encoders[labels[i]] = {f: r.encoder.get(f) for f in ROW_FIELDS}
            # by -m order, not by where a model's first record is: one lacking the first column would come last
            rank = {m: i for i, m in enumerate(model_order)}
            owner = {labels[i]: r.model for i, r in enumerate(recs)}
            cells = dict(sorted(cells.items(), key=lambda kv: rank.get(owner[kv[0]], len(rank))))
            frame = pd.DataFrame.from_dict(cells, orient="index", columns=columns)
            if len(columns) > 1:
                frame["Avg."] = frame[columns].mean(axis=1, skipna=False)  # recomputed; empty if a task is missing
            frame.index.name = "Model"
            n_kinds = len(by_kind) > 1 or len(groups) > 1
            n_models = len({r.model for r in recs})
            under = f" under {counted(len(suffix), 'protocol')}" if suffix else ""
            # a table per protocol: its caption names the protocol that differs, or the tables read as one table twice
            which = " (" + ", ".join(f"{a}={dict(proto)[a]}" for a in differing) + ")" if len(groups) > 1 else ""
            cap = caption or f"Results of {counted(n_models, 'model')}{under} on {counted(len(columns), f'{KIND_NAMES.get(kind, kind)} task')}{which}"
            if n_kinds and caption:
                cap = f"{caption} ({kind}" + (", " + ", ".join(f"{a}={v}" for a, v in proto) if len(groups) > 1 else "") + ")"
            tables.append(PaperTable(kind, frame, dict(proto), encoders, cap, frozenset(lower_is_better), row_groups,
                                     applies[kind]))
    if not tables:
        raise EmbenchError("no result records to report (check --results, --model and --task)")
    columns = list(dict.fromkeys(c for t in tables for c in t.frame.columns))
    for name in lower_is_better:  # a misspelt column would leave its best and second marked the wrong way round
        if name not in columns:
            raise UnknownNameError("column of --lower-is-better", name, columns, nearest(name, columns))
    return tables
