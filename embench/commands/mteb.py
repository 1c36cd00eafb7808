"""``embench mteb run | export | blocks``: MTEB tasks on local data, mteb's result format, block averages."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

mteb_app = typer.Typer(help="MTEB tasks through the mteb library, fed from the data root.", no_args_is_help=True)

ResultsOpt = Annotated[Path | None, typer.Option("--results-dir", help="Result records (default: $EMBENCH_RESULTS, then ./results).")]
OutputOpt = Annotated[Path | None, typer.Option("--mteb-output", help="Also write the results in mteb's format here (mteb.ResultCache layout).")]


def _print(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _blocks_table(records, fmt: str) -> str:
    from ..report.tables import render
    from ..tasks.mteb_tasks import block_averages

    frame = block_averages(records)
    return render(frame, fmt, title="MTEB block averages (mean of task-type means; cropping paper, Table 1)")


def _notes(records) -> str:
    lines = []
    for r in records:
        diffs = (r.scores or {}).get("data_differences") or []
        if diffs:
            lines.append(f"{r.display}: " + "; ".join(diffs))
    return ("* local data differs from MTEB's copy:\n  " + "\n  ".join(lines)) if lines else ""


@mteb_app.command("run")
def run(
    model: Annotated[list[str], typer.Option("--model", "-m", help="Model name, alias or folder; repeat for several.")],
    suite: Annotated[str | None, typer.Option("--suite", "-s", help="Suite (default mteb-lite).")] = None,
    task: Annotated[list[str] | None, typer.Option("--task", "-t", help="MTEB:<name> task(s), after the suite's when --suite is given too.")] = None,
    normalize: Annotated[bool | None, typer.Option("--normalize/--no-normalize", help="L2-normalise embeddings (default: the model's own).")] = None,
    pooling: Annotated[str | None, typer.Option(help="Pooler; default: the model's own.")] = None,
    layer: Annotated[int | None, typer.Option(help="Hidden layer to pool (0 = embedding output).")] = None,
    similarity: Annotated[str | None, typer.Option(help="cosine (default) or dot.")] = None,
    seed: Annotated[int | None, typer.Option(help="Task seed (default: mteb's 42).")] = None,
    batch_size: Annotated[int, typer.Option(help="Texts per batch.")] = 128,
    data: Annotated[Path | None, typer.Option("--data", help="Data root (default: $EMBENCH_DATA).")] = None,
    results_dir: ResultsOpt = None,
    cache_dir: Annotated[Path | None, typer.Option(help="Embedding cache (shared with every suite).")] = None,
    overwrite: Annotated[bool, typer.Option(help="Recompute tasks that already have a stored record.")] = False,
    mteb_output: OutputOpt = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table, markdown, csv or json.")] = "table",
) -> None:
    """Run MTEB tasks with mteb's evaluators on local data; print scores and block averages."""
    from ..api import Evaluation, evaluate
    from ..mteb_adapter import export_records

    if suite is None and not task:
        suite = "mteb-lite"
    records = []
    for name in model:
        def on_task(t, status, record, name=name):
            how = "stored" if status == "stored" else f"{record.provenance.get('wall_seconds', 0):.1f}s"
            typer.echo(f"{name} {record.display}: {100 * record.main_score:.2f} ({how})", err=True)

        ev = evaluate(name, suite, tasks=task, data=data, results_dir=results_dir, cache_dir=cache_dir,
                      overwrite=overwrite, batch_size=batch_size, on_task=on_task, similarity=similarity,
                      seed=seed, normalize=normalize, pooling=pooling, layer=layer)
        records += ev.records
    _print(Evaluation(records=records).render(fmt))
    _print(_blocks_table(records, fmt))
    notes = _notes(records)
    if notes:
        _print(notes)
    if mteb_output is not None:
        written = export_records(records, mteb_output)
        typer.echo(f"{len(written)} mteb result file(s) under {mteb_output}", err=True)


@mteb_app.command("export")
def export(
    output: Annotated[Path, typer.Option("--mteb-output", "-o", help="Folder for mteb's result layout.")],
    results_dir: ResultsOpt = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Only models whose name contains this.")] = None,
) -> None:
    """Write stored MTEB records in mteb's result format (readable by mteb.ResultCache)."""
    from ..api import results
    from ..mteb_adapter import export_records

    written = export_records(results(results_dir, model=model), output)
    for p in written:
        typer.echo(str(p))
    if not written:
        typer.echo("no stored MTEB records" + (f" in {results_dir}" if results_dir else ""), err=True)
        raise typer.Exit(1)


@mteb_app.command("blocks")
def blocks(
    results_dir: ResultsOpt = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Only models whose name contains this.")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table, markdown, csv or json.")] = "table",
) -> None:
    """Block averages of stored MTEB records: mean within each task type, then across types."""
    from ..api import results

    recs = [r for r in results(results_dir, model=model) if (r.scores or {}).get("mteb_type")]
    if not recs:
        typer.echo("no stored MTEB records", err=True)
        raise typer.Exit(1)
    _print(_blocks_table(recs, fmt))


def register(app: typer.Typer) -> None:
    app.add_typer(mteb_app, name="mteb")
