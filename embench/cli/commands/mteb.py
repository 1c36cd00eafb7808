"""``embench mteb run | export | blocks``: MTEB tasks on local data, mteb's result format, block averages."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ...core.paths import check_folder_option
from ..option_groups import ENCODING, MODEL, STORAGE, VECTORS, Given, protocol_options, shared_options
from ..options import SEED_MAX, Fmt, FmtOpt, ModelsOpt, OverwriteOpt, QuietOpt, ResultsOpt, value
from ..output import emit
from .results import nothing_to_show, stored_folder

mteb_app = typer.Typer(no_args_is_help=True)
OutputOpt = Annotated[Path | None, typer.Option("--mteb-output", help="Also write the results in mteb's format here (mteb.ResultCache layout).")]
ModelFilterOpt = Annotated[list[str] | None, typer.Option("--model", "-m", help="Only models whose name contains this; repeatable.")]


def _blocks_table(records, fmt: str) -> str:
    from ...report.tables import render
    from ...tasks.mteb.blocks import block_averages

    frame = block_averages(records)
    return render(frame, fmt, title="MTEB block averages (mean of task-type means; cropping paper, Table 1)")


def _scores_and_blocks(records, fmt: str) -> str:
    """The scores, then the block averages: two tables for a reader; for a program one JSON object (the block
    averages under ``block_averages``), or with csv the scores alone (``embench mteb blocks -f csv`` has the rest)."""
    import json

    from ...evaluation.evaluation_view import Evaluation

    scores = Evaluation(records=records).render(fmt)
    if fmt == "json":
        return json.dumps({**json.loads(scores), "block_averages": json.loads(_blocks_table(records, "json"))}, indent=2)
    return scores if fmt == "csv" else scores.rstrip("\n") + "\n" + _blocks_table(records, fmt)


def _notes(records, fmt: str) -> str:
    """How the local data differs from MTEB's copy, once per task (every model's record of a task says the same);
    in LaTeX as comments, as run's notes are (a task's ``_`` in the text broke pdflatex)."""
    from ...report.tables import latex_comment

    lines = dict.fromkeys(f"{r.display}: " + "; ".join(diffs) for r in records
                          if (diffs := (r.scores or {}).get("data_differences")))
    if not lines:
        return ""
    text = "* local data differs from MTEB's copy:\n  " + "\n  ".join(lines)
    return latex_comment(text) if fmt == "latex" else text


def mteb_task(name: str) -> str:
    """A task of ``mteb run`` is mteb's: ``STS16`` is ``MTEB:STS16`` here (embench's own STS16, SentEval's files
    under SentEval's protocol, is ``embench run -t STS16``)."""
    from ...evaluation.suites import MTEB_PREFIX

    return name if name.upper().startswith(MTEB_PREFIX.upper()) else MTEB_PREFIX + name


@mteb_app.command("run")
@protocol_options("similarity")
@shared_options(*MODEL, *ENCODING, *STORAGE, *VECTORS)
def run(
    model: ModelsOpt,
    suite: Annotated[str | None, typer.Option("--suite", "-s", help="Suite (default mteb-lite).")] = None,
    task: Annotated[list[str] | None, typer.Option("--task", "-t", help="mteb task(s), MTEB:<name> or the bare name, after the suite's when --suite is given too.")] = None,
    protocol: dict[str, str] | None = None,
    seed: Annotated[int | None, typer.Option(help="Task seed (default: mteb's 42).", min=0, max=SEED_MAX)] = None,
    opts: Given | None = None,
    overwrite: OverwriteOpt = False,
    mteb_output: OutputOpt = None,
    fmt: FmtOpt = Fmt.table,
    quiet: QuietOpt = False,
) -> None:
    """Run MTEB tasks with mteb's evaluators on local data; print scores and block averages."""
    from ...tasks.names import check_names

    check_names(suite=suite, pooling=opts["pooling"])  # before the model stack loads (mteb's task names need mteb itself)
    if mteb_output is not None:  # a file there: said now, not in mteb's traceback once every task is scored
        check_folder_option(mteb_output, "--mteb-output")
    from ...api import evaluate
    from ...tasks.mteb.adapter import export_records

    if suite is None and not task:
        suite = "mteb-lite"
    task = [mteb_task(t) for t in task or []]
    records = []
    for name in model:
        def on_task(t: str, status: str, record: Any, name: str = name) -> None:
            how = "stored" if status == "stored" else f"{record.provenance.get('wall_seconds', 0):.1f}s"
            if not quiet:
                typer.echo(f"{name} {record.display}: {100 * record.main_score:.2f} ({how})", err=True)

        ev = evaluate(name, suite, tasks=task, overwrite=overwrite, progress=not quiet, on_task=on_task,
                      **(protocol or {}), seed=seed, **opts.api())
        records += ev.records
    fmt_ = value(fmt)
    emit(_scores_and_blocks(records, fmt_))
    notes = _notes(records, fmt_)
    if notes and fmt_ in ("json", "csv"):  # stdout is then one document a program reads
        typer.echo(notes, err=True)
    elif notes:
        emit(notes)
    if mteb_output is not None:
        written = export_records(records, mteb_output)
        typer.echo(f"{len(written)} mteb result file(s) under {mteb_output}", err=True)


@mteb_app.command("export")
def export(
    output: Annotated[Path, typer.Option("--out", "-o", "--mteb-output", help="Folder for mteb's result layout.")],
    results_dir: ResultsOpt = None,
    model: ModelFilterOpt = None,
) -> None:
    """Write stored MTEB records in mteb's result format (readable by mteb.ResultCache)."""
    check_folder_option(output, "--out")
    from ...tasks.mteb.adapter import export_records
    from ...tasks.stored_results import results

    folder = stored_folder(results_dir)  # none there: nothing to show (exit 1), as `results show` says it
    written = export_records(results(folder, model=model), output)
    for p in written:
        typer.echo(str(p))
    if not written:
        nothing_to_show(f"no stored MTEB records in {folder}")


@mteb_app.command("blocks")
def blocks(
    results_dir: ResultsOpt = None,
    model: ModelFilterOpt = None,
    fmt: FmtOpt = Fmt.table,
) -> None:
    """Block averages of stored MTEB records: mean within each task type, then across types."""
    from ...tasks.stored_results import results

    folder = stored_folder(results_dir)
    recs = [r for r in results(folder, model=model) if (r.scores or {}).get("mteb_type")]
    if not recs:
        nothing_to_show(f"no stored MTEB records in {folder}")
    emit(_blocks_table(recs, value(fmt)))
