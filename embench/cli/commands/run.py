"""``embench run``: evaluate models on a suite or tasks, print the table, store one record per task."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from ..option_groups import ENCODING, MODEL, STORAGE, VECTORS, Given, protocol_options, shared_options
from ..options import (
    SEED_MAX,
    CIOpt,
    CISeedOpt,
    Fmt,
    FmtOpt,
    ModelsOpt,
    OverwriteOpt,
    QuietOpt,
    ResamplesOpt,
    value,
)
from ..output import emit, err, interrupted


def task_time(prov: dict) -> str:
    """A task's time as its share of the run's one encoding pass plus its own scoring."""
    if "encode_seconds" not in prov:
        return f"{prov.get('wall_seconds', 0):.1f} s"
    return f"{prov['wall_seconds']:.1f} s: {prov['encode_seconds']:.1f} s its share of the encoding pass + {prov['score_seconds']:.1f} s scoring"


def by_similarity(records: list[Any], scoring: str | None) -> list[str]:
    """The STS tasks of ``records`` scored by similarity although the run asked for SentEval's regressor (``scoring``):
    those without a train split (STS12-16, a task file of test pairs only), whose ``provenance.task_meta`` names no
    regressor. The run's option is asked, not the record's protocol: that names the scoring at its default, an axis
    such a task is not scored under (tasks/recorded_protocol.py), and a stored record may come from a cosine run."""
    if scoring != "regressor":
        return []
    return list(dict.fromkeys(r.display for r in records if r.kind == "sts"
                              and r.provenance.get("task_meta", {}).get("scoring") != "regressor"))


@protocol_options()
@shared_options(*MODEL, *ENCODING, *STORAGE, "task_file", *VECTORS)
def run(
    model: ModelsOpt,
    label: Annotated[list[str] | None, typer.Option("--label", help="Display name of each --model's row, in the same order (records keep the model's own name).")] = None,
    suite: Annotated[str | None, typer.Option("--suite", "-s", help="Suite name (embench list suites).")] = None,
    task: Annotated[list[str] | None, typer.Option("--task", "-t", help="Task(s) to run, after the suite's when --suite is given too; repeatable.")] = None,
    protocol: dict[str, str] | None = None,
    seed: Annotated[int | None, typer.Option(help="Seed for tasks that sample or train (default 1111; MTEB tasks: mteb's 42).", min=0, max=SEED_MAX)] = None,
    opts: Given | None = None,
    overwrite: OverwriteOpt = False,
    ci: CIOpt = None,
    resamples: ResamplesOpt = None,
    ci_seed: CISeedOpt = None,
    fmt: FmtOpt = Fmt.table,
    quiet: QuietOpt = False,
) -> None:
    """Evaluate model(s) on a suite or tasks; print the table and store one record per task."""
    from ...encoding.vector_axes import suffix  # (dim 128, int8) after a row and a line
    from ...tasks.names import check_names, resolve_tasks, with_task_files

    task = with_task_files(opts["task_file"], task)  # a task file's rows are checked before the model stack loads
    if suite is None and not task:
        suite = "sts-all"
    _, view = resolve_tasks(suite, task)  # names first: an unknown one is reported before the model stack loads
    check_names(pooling=opts["pooling"])
    from ...api import Evaluation, evaluate
    from ...core.errors import UndefinedScoreError
    if label and len(label) != len(model):
        from ...core.errors import EmbenchError

        raise EmbenchError(f"--label: {len(label)} label(s) for {len(model)} --model(s); give one per model, in order")
    evaluations, unsaved, undefined = [], {}, []
    for i, name in enumerate(model):
        def on_task(t: str, status: str, record: Any, name: str = name) -> None:
            if not quiet:
                how = "stored record reused" if status == "stored" else task_time(record.provenance)
                err.print(f"[dim]{escape(name + suffix(record.encoder))}[/] {escape(record.display)}: {100 * record.main_score:.2f} ({how})")

        try:
            ev = evaluate(
                name, suite, tasks=task, overwrite=overwrite, progress=not quiet, on_task=on_task, **(protocol or {}),
                seed=seed, **opts.api(), ci=ci, resamples=resamples, ci_seed=ci_seed,
                label=label[i] if label else None,  # evaluate names the rows (a group's, each dim's)
            )
        except KeyboardInterrupt:
            raise interrupted("[yellow]interrupted[/]: finished tasks are stored; run the same command again to resume.") from None
        except UndefinedScoreError as e:  # one model's undefined score does not stop the others: said once, at the end
            undefined.append(f"{name}: {e}" if len(model) > 1 else str(e))
            if e.evaluation is None:
                continue
            ev = e.evaluation
        evaluations.append(ev)
        unsaved.update({f"{name} {task}": why for task, why in ev.unsaved.items()})
    if undefined and not any(ev.records for ev in evaluations):
        raise UndefinedScoreError("; ".join(undefined))
    emit(Evaluation.merge(evaluations, view=view).render(value(fmt)))  # the scores, even when saving failed
    from ...evaluation.suites import SUITES

    asked = (protocol or {}).get("scoring") or (SUITES.get(suite).protocol.get("scoring") if suite else None)
    similarity = by_similarity([r for ev in evaluations for r in ev.records], asked)
    if similarity and not quiet:
        many = len(similarity) > 1
        err.print(f"[dim]--scoring regressor: {escape(', '.join(similarity))} {'have' if many else 'has'} no train split, so "
                  f"{'they were' if many else 'it was'} scored by similarity (as SentEval scores STS12-16)[/]")
    for what, why in unsaved.items():
        err.print(f"[bold red]not saved:[/] {escape(what)}: {escape(why)}", highlight=False)
    if undefined:  # after the table and the unsaved lines: status 2, as any error
        raise UndefinedScoreError("; ".join(undefined))
    if unsaved:
        raise typer.Exit(1)
