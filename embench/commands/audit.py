"""``embench audit``: one model under every protocol; which protocol published numbers used;
``embench audit table FILE``: recompute the averages of published tables."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# Imported when cli.py registers its commands, after it has defined these.
from ..cli import DataOpt, Fmt, FmtOpt, ResultsOpt, _emit, err


def register(app: typer.Typer) -> None:
    audit_app = typer.Typer(
        help="Protocol audit: one model under every protocol variant (SimCSE Table B.2), and which "
        "protocol published numbers match. `embench audit table FILE` checks a published table.",
        invoke_without_command=True,
    )
    app.add_typer(audit_app, name="audit")

    @audit_app.callback()
    def audit_cmd(
        ctx: typer.Context,
        model: Annotated[str | None, typer.Option("--model", "-m", help="Model name, alias or folder.")] = None,
        knobs: Annotated[str | None, typer.Option(help="Comma-separated knobs (default: all): aggregation, correlation, text, sick_split, scoring, similarity, pooling, dtype, batch_size, max_length.")] = None,
        task: Annotated[list[str] | None, typer.Option("--task", "-t", help="Tasks (default: the seven of sts-all).")] = None,
        reported: Annotated[str | None, typer.Option(help='Published numbers: "STS12=70.97 STS13=76.53 ..." or seven numbers in sts-all order.')] = None,
        reported_file: Annotated[Path | None, typer.Option(help="CSV of published numbers (rows task,value or a header of tasks and one row).")] = None,
        tolerance: Annotated[float, typer.Option(help="Largest residual (x100) that still counts as a match.")] = 0.01,
        device: Annotated[str | None, typer.Option(help="cpu, cuda, ...")] = None,
        data: DataOpt = None,
        results_dir: ResultsOpt = None,
        cache_dir: Annotated[Path | None, typer.Option(help="Embedding cache folder.")] = None,
        fmt: FmtOpt = Fmt.table,
    ) -> None:
        if ctx.invoked_subcommand is not None:
            return
        from ..audit import audit, audit_to_json, parse_reported, read_reported_file
        from ..core.errors import EmbenchError
        from ..report.tables import render

        if model is None:
            raise EmbenchError("embench audit needs --model (or the subcommand: embench audit table FILE)")
        rep = None
        if reported and reported_file:
            raise EmbenchError("give --reported or --reported-file, not both")
        if reported:
            rep = parse_reported(reported)
        elif reported_file:
            rep = read_reported_file(reported_file)
        knob_list = [k.strip() for k in knobs.split(",")] if knobs else None
        result = audit(model, knobs=knob_list, tasks=task, reported=rep, tolerance=tolerance, data=data,
                       results_dir=results_dir, cache_dir=cache_dir, device=device)
        f = fmt.value
        if f == "json":
            _emit(audit_to_json(result), fmt)
            return
        _emit(render(result.rows, f, title=f"{model}: protocol variants"), fmt)
        eff = result.knob_effects.copy()
        if not eff.empty:
            eff = eff.set_index("knob")
            _emit(render(eff, f, scaled=["delta_avg", "delta_task"], title="knobs ranked by how far they move Avg. (x100)"), fmt)
        if result.matches is not None:
            m = result.matches.head(10).copy()
            res_cols = [c for c in m.columns if c.startswith("res:")]
            m = m[["aggregation", "correlation", "text", "sick_split", "similarity", "scoring", "n_within", "max_abs", "mean_abs", *res_cols]]
            m.columns = [c.removeprefix("res:") for c in m.columns]
            m.index.name = "rank"
            m.index = m.index + 1
            shown = m.copy()
            for c in shown.columns:
                if shown[c].dtype.kind == "f":
                    shown[c] = shown[c].map(lambda x: f"{x:+.2f}")
            _emit(render(shown, f, scaled=[], title="closest protocol combinations (residual = ours - reported, x100)"), fmt)
            v = result.verdict
            _emit({"markdown": f"\n**Verdict:** {v}", "latex": f"% verdict: {v}", "csv": f"# verdict: {v}"}.get(f, f"verdict: {v}"), fmt)

    @audit_app.command("table")
    def audit_table(
        file: Annotated[Path, typer.Argument(help="CSV, markdown (one or more tables) or LaTeX tabular of published numbers.")],
        tolerance: Annotated[float, typer.Option(help="Largest |printed - recomputed| average that is only rounding.")] = 0.01,
    ) -> None:
        """Recompute each row's average and flag rows whose printed Avg. is off, and values duplicated across columns."""
        from ..audit import check_table

        issues = check_table(file, tolerance)
        averages = [i for i in issues if i.kind == "average"]
        for i in issues:
            style = "red" if i.kind == "average" else "yellow"
            typer.echo(f"{file}:{i.row}: [{i.kind}] {i.name}: {i.message}") if not err.is_terminal else None
            if err.is_terminal:
                err.print(f"[{style}]{file}:{i.row}[/]: [{i.kind}] {i.name}: {i.message}")
        typer.echo(f"{len(averages)} average(s) off, {len(issues) - len(averages)} duplicated value(s) in {file}")
        if averages:
            raise typer.Exit(1)
