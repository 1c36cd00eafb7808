"""``embench audit``: one model under every protocol; which protocol published numbers used;
``embench audit table FILE``: recompute the averages of published tables."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from ...audit.knobs import KNOBS, knob_name
from ..option_groups import ENCODING, VECTORS, Given, shared_options
from ..options import CIOpt, Fmt, FmtOpt, QuietOpt, ResamplesOpt, value
from ..output import emit, err

audit_app = typer.Typer(invoke_without_command=True)
MATCH_COLUMNS = ["aggregation", "correlation", "text", "sick_split", "similarity", "scoring", "n_within", "max_abs", "mean_abs"]


@audit_app.callback()
@shared_options("prompt", "prompt_name", "revision", "bidirectional_last", "bidirectional_mode", "adapter", "dtype", *ENCODING, "data", "results_dir", "cache_dir", "task_file", *VECTORS)
def audit(
    ctx: typer.Context,
    model: Annotated[list[str] | None, typer.Option("--model", "-m", help="Model name, alias or folder; repeat to audit several, one after another.")] = None,
    knobs: Annotated[str | None, typer.Option(help=f"Comma-separated knobs (default: all): {', '.join(k.replace('_', '-') for k in KNOBS)}.")] = None,
    task: Annotated[list[str] | None, typer.Option("--task", "-t", help="Tasks (default: the seven of sts-all).")] = None,
    reported: Annotated[str | None, typer.Option(help='Published numbers of STS tasks, x100, each task once: "STS12=70.97 STS13=76.53 ..." or seven numbers in sts-all order.')] = None,
    reported_file: Annotated[Path | None, typer.Option(help="CSV of published numbers (rows task,value or a header of tasks and one row).")] = None,
    tolerance: Annotated[float, typer.Option(min=0.0, help="Largest residual (x100) that still counts as a match; each score is first rounded to its reported number's decimals (18.9: one), so 0.01 asks for the printed digits.")] = 0.01,
    opts: Given | None = None,
    ci: CIOpt = None,
    resamples: ResamplesOpt = None,
    sample: Annotated[int, typer.Option(min=1, help="Texts (a seeded sample of the suite's) re-encoded for the batch-size knob, and for bf16/fp16 on a CPU without native arithmetic.")] = 2000,
    full_batch_check: Annotated[bool, typer.Option("--full-batch-check", help="Re-encode every text at each batch size instead of a sample.")] = False,
    full_dtype_check: Annotated[bool, typer.Option("--full-dtype-check", help="Encode every text in bf16/fp16 even on a CPU that emulates them (about 6x slower).")] = False,
    full_length_check: Annotated[bool, typer.Option("--full-length-check", help="Encode every text at the shorter maximum length, not only those it truncates.")] = False,
    figures: Annotated[Path | None, typer.Option("--figures", help="Write the figure of Avg. against the dimensions kept, one line per precision (the truncate-dim and quantize knobs' grid), as <model>-score_by_dimension.png and .pdf into this folder.")] = None,
    fmt: FmtOpt = Fmt.table,
    quiet: QuietOpt = False,
) -> None:
    """Protocol audit: one model under every protocol variant, and which protocol published numbers match."""
    if ctx.invoked_subcommand is not None:
        return
    from ...core.errors import EmbenchError
    from ...core.paths import check_folder_option
    from ...tasks.names import check_names, with_task_files

    task = with_task_files(opts.pop("task_file"), task)  # a task file's tasks are audited like the built-in ones
    check_names(tasks=task)  # before the model stack loads
    from ...audit.protocol import audit as run_audit
    from ...audit.protocol import audit_to_json
    from ...audit.reported import parse_reported, read_reported_file

    if not model:
        raise EmbenchError("embench audit needs --model (or the subcommand: embench audit table FILE)")
    if reported and reported_file:
        raise EmbenchError("give --reported or --reported-file, not both")
    rep = parse_reported(reported) if reported else read_reported_file(reported_file) if reported_file else None
    knob_list = [knob_name(k) for k in knobs.split(",") if k.strip()] if knobs else None
    if figures is not None and knob_list is not None and not {"truncate_dim", "quantize"} & set(knob_list):
        raise EmbenchError("--figures draws the grid of the truncate-dim and quantize knobs: add one of them to --knobs")
    if figures is not None:
        check_folder_option(figures, "--figures")

    def step(msg: str) -> None:  # a line per step, in a terminal and in logs alike
        err.print(f"[dim]audit[/] {escape(msg)}", highlight=False)

    results = []
    for m in model:  # one after another: each model's tables are printed as soon as its audit ends
        result = run_audit(m, knobs=knob_list, tasks=task, reported=rep, tolerance=tolerance, **opts.api(), ci=ci, resamples=resamples,
                           sample=sample, full_batch_check=full_batch_check, full_dtype_check=full_dtype_check,
                           full_length_check=full_length_check,
                           progress=not quiet, on_step=None if quiet else step)
        if figures is not None and result.dimensions is not None and not result.dimensions.empty:
            from ...audit.dimensions import dimension_figure
            from ...evaluation.results import slug

            for path in dimension_figure(result.dimensions, figures, m, stem=f"{slug(m)}-score_by_dimension"):
                err.print(f"[dim]audit[/] figure: {escape(str(path))}", highlight=False)
        if value(fmt) in ("json", "csv"):  # one document for every model, written once they are all audited
            results.append(result)
        else:
            _print_tables(result, m, value(fmt))
    if results and value(fmt) == "csv":
        from ...report.tables import stacked_csv

        emit(stacked_csv([part for m, r in zip(model, results, strict=True) for part in _csv_parts(r, m)]))
    elif results:  # JSON: one object for one model, a list for several
        emit(audit_to_json(results[0]) if len(results) == 1 else "[" + ",\n".join(audit_to_json(r) for r in results) + "]")


def _audit_tables(result, model: str) -> list[tuple[str, str, Any, dict[str, Any]]]:
    """The variants, the knobs ranked by effect, the dimensions grid, the forward passes and (with reported numbers)
    the closest protocols, in print order: ``(name, title, frame, render's options)`` each."""
    import pandas as pd

    base = {("baseline", c): iv for c, iv in result.baseline_intervals.items()}
    note = "; ".join(n for n in (result.interval_note, result.sample_note) if n) or None
    tables = [("variants", f"{model}: protocol variants", result.rows, {"intervals": base or None, "note": note})]
    eff = result.knob_effects.copy()
    if not eff.empty:
        note = ("beyond_noise: the knob's score lies outside the baseline's interval" if result.baseline_intervals else None)
        tables.append(("knobs", "knobs ranked by how far they move Avg. (x100)", eff.set_index("knob"),
                       {"scaled": ["delta_avg", "delta_task"], "note": note}))
    if result.dimensions is not None and not result.dimensions.empty:
        from ...audit.dimensions import grid_table

        tables.append(("dimensions", "Avg. by dimensions kept (Matryoshka truncation) and precision", grid_table(result.dimensions), {}))
    if result.passes.rows:
        passes = pd.DataFrame(result.passes.rows).set_index("pass")
        tables.append(("passes", f"forward passes: {result.passes.summary()}", passes, {"scaled": []}))
    else:  # titled as the others: untitled, its markdown rows ran on as rows of the table above
        tables.append(("passes", "forward passes", pd.DataFrame({"summary": [result.passes.summary()]}), {"scaled": []}))
    if result.matches is not None:
        m = result.matches.head(10).copy()
        m = m[MATCH_COLUMNS + [c for c in m.columns if c.startswith("res:")]]
        m.columns = [c.removeprefix("res:") for c in m.columns]
        m.index.name = "rank"
        m.index = m.index + 1
        for c in m.columns:
            if m[c].dtype.kind == "f":
                m[c] = m[c].map(lambda x: f"{x:+.2f}")
        tables.append(("matches", "closest protocol combinations (residual = ours at the reported decimals - reported, x100)", m, {"scaled": []}))
    return tables


def _print_tables(result, model: str, f: str) -> None:
    """The audit's tables one after another, then (with reported numbers) the verdict."""
    from ...report.tables import render

    for _, title, frame, options in _audit_tables(result, model):
        emit(render(frame, f, title=title, **options))
    if result.matches is not None:
        v = result.verdict
        emit({"markdown": f"\n**Verdict:** {v}", "latex": f"% verdict: {v}"}.get(f, f"verdict: {v}"))


def _csv_parts(result, model: str) -> list[tuple[dict[str, str], str]]:
    """The audit's tables as parts of one CSV (``report.tables.stacked_csv``), each row keyed by its model and table;
    the verdict is a table of its own: tables one after another, and a ``#`` line, did not read back as CSV."""
    import pandas as pd

    from ...report.tables import notes_csv, render

    parts, notes = [], []
    for name, title, frame, options in _audit_tables(result, model):
        parts.append(({"model": model, "table": name}, render(frame, "csv", **options)))
        # what the other formats print around a table and CSV cells cannot hold: the passes' summary and the matches'
        # "residual = ours - reported" are titles, the interval, sample and beyond_noise notes render's note; each
        # note names its table, as notes rows (csv_with_notes's shape) after the model's tables
        notes += [f"{name}: {text}" for text in ((title if name in ("passes", "matches") else None), options.get("note")) if text]
    if result.matches is not None:
        parts.append(({"model": model, "table": "verdict"}, render(pd.DataFrame({"verdict": [result.verdict]}), "csv", scaled=[])))
    if notes:
        parts.append(({"model": model, "table": "notes"}, notes_csv(notes)))
    return parts


@audit_app.command("table")
def table(
    file: Annotated[Path, typer.Argument(help="CSV, markdown (one or more tables) or LaTeX tabular of published numbers.")],
    tolerance: Annotated[float, typer.Option(min=0.0, help="Largest |printed - recomputed| average that is only rounding.")] = 0.01,
) -> None:
    """Recompute each row's average and flag rows whose printed Avg. is off, and values duplicated across columns."""
    from ...audit.published_table import check_table

    issues = check_table(file, tolerance)
    averages = [i for i in issues if i.kind == "average"]
    unchecked = sum(i.kind == "unchecked" for i in issues)
    for i in issues:
        if err.is_terminal:
            style = "red" if i.kind == "average" else "yellow"
            plain = escape(f"[{i.kind}] {i.name}: {i.message}")  # a '[' in a cell must not be read as markup
            err.print(f"[{style}]{escape(str(file))}:{i.row}[/]: {plain}")
        else:
            typer.echo(f"{file}:{i.row}: [{i.kind}] {i.name}: {i.message}")
    duplicates = len(issues) - len(averages) - unchecked
    skipped = f", {unchecked} row(s) not checked (fewer cells than the header)" if unchecked else ""
    typer.echo(f"{len(averages)} average(s) off, {duplicates} duplicated value(s){skipped} in {file}")
    if averages:
        raise typer.Exit(1)
