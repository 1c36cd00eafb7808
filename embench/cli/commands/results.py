"""``embench results show``: stored result records."""

from __future__ import annotations

from typing import Annotated

import typer

from ..options import Fmt, FmtOpt, ResultsOpt, value
from ..output import emit, err

results_app = typer.Typer(no_args_is_help=True)
# protocol fields shown only when they differ from these defaults (the STS axes are always shown)
SHOWN_IF_CHANGED = (("scoring", "cosine"), ("classifier", "default"), ("pair_features", "senteval-code"), ("seed", 1111))


@results_app.command("show")
def show(
    results_dir: ResultsOpt = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Only models whose name contains this.")] = None,
    task: Annotated[str | None, typer.Option("--task", "-t", help="Only this task.")] = None,
    fmt: FmtOpt = Fmt.table,
) -> None:
    """Print stored results: one row per model and protocol, tasks as columns."""
    import pandas as pd

    from ...api import results
    from ...report.tables import render

    recs = results(results_dir, model=model, task=task)
    if not recs:
        err.print("no stored results" + (f" in {results_dir}" if results_dir else ""))
        raise typer.Exit(1)
    rows: dict[tuple, dict] = {}
    for r in recs:
        p = r.protocol
        proto = f"{p.get('aggregation')}/{p.get('correlation')}/{p.get('text')}/sick={p.get('sick_split')}/{p.get('similarity')}"
        proto += "".join(f"/{k}={p[k]}" for k, d in SHOWN_IF_CHANGED if p.get(k, d) != d)
        enc = f"{r.encoder.get('pooling')}" + (f"@{r.encoder.get('layer')}" if r.encoder.get("layer") != r.encoder.get("num_layers") else "")
        rows.setdefault((r.model, enc, r.encoder.get("dtype"), proto), {})[r.display] = r.main_score
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index = pd.MultiIndex.from_tuples(frame.index, names=["model", "pooling", "dtype", "protocol"])
    frame = frame.reset_index()
    frame["Avg."] = frame.drop(columns=["model", "pooling", "dtype", "protocol"]).mean(axis=1, skipna=False)
    emit(render(frame, value(fmt), scaled=[c for c in frame.columns if c not in ("model", "pooling", "dtype", "protocol")]))
