"""``embench results show | export``: stored result records, and the same records in another tool's format."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from ...core.errors import EmbenchError
from ...core.paths import not_there
from ..options import Fmt, FmtOpt, ResultsOpt, cli_results, value
from ..output import emit, err

results_app = typer.Typer(no_args_is_help=True)
# ``results export --format``: a format -> its writer ``(records, out) -> files written`` (another format: one line)
EXPORTERS = {"mteb": "embench.tasks.mteb.export:export_mteb"}
ExportFormat = Enum("ExportFormat", {name: name for name in EXPORTERS}, type=str)


@results_app.command("show")
def show(
    results_dir: ResultsOpt = None,
    model: Annotated[list[str] | None, typer.Option("--model", "-m", help="Only models whose name contains this; repeatable.")] = None,
    task: Annotated[list[str] | None, typer.Option("--task", "-t", help="Only this task (a name or alias, e.g. STS-B); repeatable.")] = None,
    fmt: FmtOpt = Fmt.table,
) -> None:
    """Print stored results: one row per model and setting, tasks as columns in the suites' order.

    The settings shared by every row (protocol and encoder) are printed once under the table; those that
    differ between rows become columns, so two rows never look alike while holding different protocols."""
    from ...report.tables import csv_with_notes, render

    recs = _stored(results_dir, model, task)
    frame, note, shared = results_frame(recs)
    scaled = [c for c in frame.columns if c not in frame.attrs["settings"]]
    if value(fmt) == "json":  # says what it holds: the scale, each column's metric (as run says it), the shared settings
        import json

        from ...evaluation.evaluation_view import column_metrics
        from ...report.json_records import frame_records

        rows = frame_records(frame)
        emit(json.dumps({"scale": "fractions: printed x100 in the tables", "metrics": column_metrics(recs), "shared": shared,
                         "rows": rows}, indent=2, default=str))
    elif value(fmt) == "csv":  # render leaves a note out of CSV: rows of their own, as run and compare give them
        emit(csv_with_notes(render(frame, "csv", scaled=scaled), [note] if note else [], "scores"))
    else:
        emit(render(frame, value(fmt), scaled=scaled, note=note))


@results_app.command("export")
def export(
    fmt: Annotated[ExportFormat, typer.Option("--format", "-f", help="mteb: mteb's result layout, read by mteb.ResultCache.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="A new or empty folder for the exported files.")],
    results_dir: ResultsOpt = None,
    model: Annotated[list[str] | None, typer.Option("--model", "-m", help="Only models whose name contains this; repeatable.")] = None,
    task: Annotated[list[str] | None, typer.Option("--task", "-t", help="Only this task (a name or alias, e.g. STS-B); repeatable.")] = None,
) -> None:
    """Write every stored record (MTEB, STS, transfer) in another tool's format; print the files written."""
    from ...core.registry import import_path

    recs = _stored(results_dir, model, task)
    written = import_path(EXPORTERS[value(fmt)])(recs, out)
    emit("\n".join(map(str, written)))
    err.print(f"{len(recs)} record(s): {len(written)} {value(fmt)} result file(s) under {out}")


def _stored(results_dir: Path | None, model: list[str] | None, task: list[str] | None):
    """The records asked for; none is exit 1 with what the folder does hold when a filter left nothing."""
    from ...tasks.stored_results import results

    folder = stored_folder(results_dir)
    recs = results(folder, model=model, task=task)
    if not recs:
        nothing_matches(folder, results(folder) if model or task else [], {"--model": model, "--task": task})
    return recs


# Nothing to show (no results folder yet, none stored, a filter that keeps none) is exit 1 with a line on stderr, not
# an error (exit 2: a wrong path's kind, an unknown name), as `data check` exits 1 on a root without the manifest's
# files: `results show | export`, `report` and `mteb blocks | export` say it alike.
def stored_folder(results_dir: Path | None) -> Path:
    """``--results-dir``, else the command line's default ($EMBENCH_RESULTS, then ./results); a path of the wrong kind
    is an error, a folder that does not exist (the default before a first run) nothing to show."""
    folder = cli_results(results_dir)
    if folder.exists() and not folder.is_dir():  # a path of the wrong kind is said as such, not as missing
        raise EmbenchError(f"--results-dir {folder} {not_there(folder, 'folder')}")
    if not folder.is_dir():
        nothing_to_show(f"no stored results in {folder} (no such folder)")
    return folder


def nothing_matches(folder: Any, held: Sequence, filters: dict[str, Sequence[str] | None]) -> NoReturn:
    """Nothing to show: ``folder`` holds no record, or only the records ``held``, which ``filters`` (an option -> the
    values given) did not keep."""
    if not held:
        nothing_to_show(f"no stored results in {folder}")
    asked = " and ".join(f"{flag} {', '.join(v)}" for flag, v in filters.items() if v)
    nothing_to_show(f"no stored result in {folder} matches {asked}; it holds {len(held)} record(s) of model(s) "
                    f"{_some({r.model for r in held})} on task(s) {_some({r.display for r in held})}")


def nothing_to_show(message: str) -> NoReturn:
    err.print(message, markup=False, highlight=False)  # a '[' in a folder's name is no markup
    raise typer.Exit(1)


def _some(names: set[str], most: int = 8) -> str:
    shown = sorted(names)[:most]
    return ", ".join(shown) + (f" and {len(names) - most} more" if len(names) > most else "")


def results_frame(recs):
    """Records as one row per (model, differing settings), task columns in registry order, then Avg.;
    a note of the settings every row shares, and those settings.

    A setting a record does not have (a transfer task has no STS aggregation, an MTEB task no pooling of
    embench's) does not split rows: the record joins every row of its model that it does not contradict,
    so a model's STS and transfer scores stand on one row, as ``report`` shows them."""
    import pandas as pd

    from ...core.identity_fields import comparable
    from ...models.aliases import canonical_model
    from ...report.protocol_groups import agrees, applies_to, row_keys, scored_protocol
    from ...report.tables import column_names
    from ...tasks import TASKS
    from ...tasks.record_axes import protocol_axes

    # only the protocol axes a record's task is scored under (None for the others, which agree with every row): STS-B's
    # score has no aggregation, MR's no correlation, STS13's no --sick-split (stored at its default: not a second row)
    fields = _identity_fields(recs)
    protocols = [scored_protocol(r, protocol_axes) for r in recs]
    # a task file's data digest and a plug-in task's code are among them, keyed by the task (protocol_groups): two
    # versions of one task's data are two rows, while two task files share one
    settings = [{"fingerprint": r.encoder.get("fingerprint"), **p, **_encoder_settings(r, fields)}
                for r, p in zip(recs, protocols, strict=True)]
    keys = list(dict.fromkeys(k for s in settings for k in s))
    differing = [k for k in keys if len({repr(s.get(k)) for s in settings if s.get(k) is not None}) > 1]
    shared = {k: v for k in keys if k not in differing
              and (v := next((s[k] for s in settings if s.get(k) is not None), None)) is not None}
    # an alias and its hub id (all-MiniLM-L6-v2, sentence-transformers/all-MiniLM-L6-v2) are one row
    # when their weights are the same (differing fingerprints show as a column)
    entries = [(canonical_model(r.model), tuple(comparable(s.get(k)) for k in differing), r)
               for r, s in zip(recs, settings, strict=True)]  # comparable: a model's prompts (a dict) as text
    keys_of_rows = row_keys([(m, v) for m, v, _ in entries])
    rows: dict[tuple, dict] = {key: {} for key in keys_of_rows}
    rows_of_model: dict[str, list[tuple]] = {}  # a record is matched with its own model's rows only
    for key in keys_of_rows:
        rows_of_model.setdefault(key[0], []).append(key)
    columns = column_names(recs)  # an mteb task and a task file of its name: a column each
    for (model, values, r), column in zip(entries, columns, strict=True):
        for key in rows_of_model[model]:
            if agrees(values, key[1:]):
                rows[key][column] = r.main_score
    order = {n: i for i, n in enumerate(TASKS.names())}
    shown = {column: order.get(r.task, len(order)) for r, column in zip(recs, columns, strict=True)}
    # the registry's tasks in its order, then the others (task files, plug-ins) by name: never in a set's order,
    # which changes with the hash seed
    tasks = sorted({c for row in rows.values() for c in row}, key=lambda c: (shown.get(c, len(order)), c))
    ordered = sorted(rows.items(), key=lambda kv: [_sortable(v) for v in kv[0]])  # layer 6 before 12
    records = [{"model": key[0], **dict(zip(differing, key[1:], strict=True)), **{t: row.get(t) for t in tasks}}
               for key, row in ordered]
    frame = pd.DataFrame.from_records(records, columns=["model", *differing, *tasks])
    for k in differing:  # settings as stored: layer 12, not 12.0 (a column with a None would turn floats)
        frame[k] = pd.Series([rec[k] for rec in records], dtype=object)
    frame[tasks] = frame[tasks].astype(float)
    frame["Avg."] = frame[tasks].mean(axis=1, skipna=False)
    frame.attrs["settings"] = ["model", *differing]
    only = applies_to(recs, protocols)  # sick_split=full (SICK-R): not a setting of STS13's column
    note = "shared by every row: " + ", ".join(f"{k}={v}" + (f" ({only[k]})" if k in only else "")
                                               for k, v in shared.items()) if shared else None
    return frame.reset_index(drop=True), note, shared


def _identity_fields(recs) -> list[str]:
    """Every setting of a record's identity (core/identity_fields.py) besides the fingerprint; the prompt and the
    optional ones only where some record has one. Records with and without a prompt (or normalised and not) are two
    rows, not one row whose score depends on which file was read last."""
    from ...core.identity_fields import ENCODER_FIELDS, OPTIONAL_FIELDS

    always = [k for k in ENCODER_FIELDS if k not in ("fingerprint", "prompt")]
    return always + [k for k in ("prompt", *OPTIONAL_FIELDS) if any(r.encoder.get(k) for r in recs)]


def _encoder_settings(r, fields: list[str]) -> dict:
    """A record's value of each field as tables show it; None (it agrees with every row) only where an older record
    lacks a field that has no unset reading."""
    from ...core.identity_fields import UNSET, shown

    return {k: None if k not in r.encoder and k not in UNSET else shown(k, r.encoder.get(k)) for k in fields}


def _sortable(v) -> tuple:
    """Numbers by value, then text, then unset settings last."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (0, v, "")
    return (1, 0, str(v)) if v is not None else (2, 0, "")
