"""``embench results show``: stored result records."""

from __future__ import annotations

from typing import Annotated

import typer

from ..options import Fmt, FmtOpt, ResultsOpt, value
from ..output import emit, err

results_app = typer.Typer(no_args_is_help=True)


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
    from ...api import results
    from ...report.tables import render

    recs = results(results_dir, model=model, task=task)
    if not recs:
        err.print("no stored results" + (f" in {results_dir}" if results_dir else ""))
        raise typer.Exit(1)
    frame, note = results_frame(recs)
    emit(render(frame, value(fmt), scaled=[c for c in frame.columns if c not in frame.attrs["settings"]], note=note))


def results_frame(recs):
    """Records as one row per (model, differing settings), task columns in registry order, then Avg.;
    and a note of the settings every row shares."""
    import pandas as pd

    from ...models.aliases import ALIASES
    from ...tasks import TASKS

    settings = [{"fingerprint": r.encoder.get("fingerprint"), **{f"{k}": v for k, v in r.protocol.items()},
                 "pooling": r.encoder.get("pooling"), "layer": r.encoder.get("layer"), "dtype": r.encoder.get("dtype"),
                 "max_length": r.encoder.get("max_length"), "prompt": r.encoder.get("prompt") or None} for r in recs]
    keys = list(dict.fromkeys(k for s in settings for k in s))
    differing = [k for k in keys if len({repr(s.get(k)) for s in settings}) > 1]
    shared = {k: settings[0].get(k) for k in keys if k not in differing and settings[0].get(k) is not None}
    rows: dict[tuple, dict] = {}
    for r, s in zip(recs, settings, strict=True):
        # an alias and its hub id (all-MiniLM-L6-v2, sentence-transformers/all-MiniLM-L6-v2) are one row
        # when their weights are the same (differing fingerprints show as a column)
        name = ALIASES.canonical(r.model) if r.model in ALIASES else r.model
        rows.setdefault((name, *(s.get(k) for k in differing)), {})[r.display] = r.main_score
    order = {n: i for i, n in enumerate(TASKS.names())}
    shown = {r.display: order.get(r.task, len(order)) for r in recs}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame = frame[sorted(frame.columns, key=lambda c: shown.get(c, len(order)))]
    frame.index = pd.MultiIndex.from_tuples(frame.index, names=["model", *differing])
    frame = frame.reset_index().sort_values(["model", *differing], key=lambda col: col.astype(str), kind="stable")
    frame["Avg."] = frame.drop(columns=["model", *differing]).mean(axis=1, skipna=False)
    frame.attrs["settings"] = ["model", *differing]
    note = "shared by every row: " + ", ".join(f"{k}={v}" for k, v in shared.items()) if shared else None
    return frame.reset_index(drop=True), note


