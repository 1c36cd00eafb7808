"""``embench grid``: models x tasks x protocols, one job per model, locally or on Slurm; ``embench grid status DIR``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ..option_groups import Given, shared_options
from ..options import Fmt, FmtOpt, value
from ..output import emit, err, interrupted

grid_app = typer.Typer(invoke_without_command=True)
ResultsDirArg = Annotated[Path, typer.Argument(help="The results folder of the grid.")]


def _print_status(cells, states, fmt: str) -> int:
    """The table of cells not done (each failure with its log), then the counts; returns how many are not done."""
    from ...grid.status import status_frame, summary
    from ...report.tables import render

    counts = summary(states)
    frame = status_frame(cells, states)
    if fmt in ("csv", "json"):  # a script reading a finished grid gets an empty list, not nothing; each failure's log
        emit(render(frame, fmt))  # in its row, and nothing else on stdout (a line after it broke the JSON)
    elif len(frame):
        # the log paths after the table, whole: a table cut to the terminal's width would cut them
        emit(render(frame.drop(columns=["log"]), fmt))
        for log, rows in frame[frame["log"] != ""].groupby("log", sort=False):
            emit(f"{', '.join(sorted(set(rows['state'])))}: {len(rows)} cell(s), log {log}")
    # "unknown" only when some are: the line reads as before wherever Slurm answers
    err.print(" ".join(f"{k}: {v}" for k, v in counts.items() if k != "unknown" or v) + f" (of {len(cells)} cells)",
              highlight=False)
    return len(cells) - counts["done"]


# grid's Slurm settings with options of their own: the parameter, the option, the setting it gives
SLURM_FLAGS = (("slurm_partition", "--slurm-partition", "partition"), ("gpus_per_job", "--gpus-per-job", "gpus_per_job"),
               ("cpus_per_job", "--cpus-per-job", "cpus_per_job"), ("array_parallelism", "--array-parallelism", "array_parallelism"),
               ("timeout_min", "--timeout-min", "timeout_min"))


def _slurm_settings(ctx: typer.Context, executor: str, slurm_option: list[str] | None):
    """The Slurm settings the command line gives (defaults are SlurmSettings' own); refused without ``--executor
    slurm``, where they would be ignored and the grid run on this machine."""
    from ...core.errors import EmbenchError
    from ...grid.slurm_settings import SlurmSettings

    # by the source's name: typer's click may be its own copy, whose ParameterSource is not click's
    given = {setting: (f"{flag} {ctx.params[param]}", ctx.params[param]) for param, flag, setting in SLURM_FLAGS
             if getattr(ctx.get_parameter_source(param), "name", "DEFAULT") != "DEFAULT"}
    if executor != "slurm" and (given or slurm_option):
        named = [*(f"--slurm-option {o}" for o in slurm_option or []), *(spelled for spelled, _ in given.values())]
        raise EmbenchError(f"{', '.join(named)}: only with --executor slurm (without it the grid runs on this machine); "
                           "add --executor slurm, or drop them")
    return SlurmSettings.from_options(slurm_option, flags=given)


@grid_app.callback()
@shared_options("pooling", "max_length", "dtype", "revision", "prompt_name", "device", "batch_size", "data", "cache_dir")
def grid(
    ctx: typer.Context,
    models: Annotated[list[str] | None, typer.Option("--model", "--models", "-m", help="Models: names, folders, a list file (.txt, one a line) or a glob (quote it: 'ckpt/step-*'); repeatable.")] = None,
    suite: Annotated[str | None, typer.Option("--suite", "-s", help="Suite name (embench list suites).")] = None,
    task: Annotated[list[str] | None, typer.Option("--task", "-t", help="Task(s), after the suite's when --suite is given too; repeatable.")] = None,
    protocols: Annotated[Path | None, typer.Option("--protocols", help="YAML or JSON list of protocol settings, e.g. '- {aggregation: all}' '- {aggregation: wmean, correlation: pearson}' (default: one, SimCSE's).")] = None,
    results: Annotated[Path | None, typer.Option("--results", "--results-dir", help="The results folder all jobs write into (shared by every node).")] = None,
    executor: Annotated[str, typer.Option(help="local (processes on this machine) or slurm (a submitit job array).")] = "local",
    workers: Annotated[int, typer.Option(help="Local executor: jobs at once.")] = 1,
    slurm_partition: Annotated[str | None, typer.Option(help="Slurm partition.")] = None,
    gpus_per_job: Annotated[int, typer.Option(help="Slurm: GPUs per job.")] = 0,
    cpus_per_job: Annotated[int | None, typer.Option(help="Slurm: CPUs per job.")] = None,
    array_parallelism: Annotated[int, typer.Option(help="Slurm: array tasks running at once.")] = 64,
    timeout_min: Annotated[int, typer.Option(help="Slurm: time limit per job in minutes (a job past it is requeued).")] = 240,
    slurm_option: Annotated[list[str] | None, typer.Option(help="Any other sbatch option as key=value (e.g. account=abc), or a setting as train names it (mem_gb=16); repeatable.")] = None,
    devices: Annotated[str | None, typer.Option(help="Encode on several devices of a node, one process each: cuda:0,cuda:1 (results as on one).")] = None,
    dry_run: Annotated[bool, typer.Option(help="Write the job files (and for slurm the sbatch file of the array); run nothing.")] = False,
    opts: Given | None = None,
    fmt: FmtOpt = Fmt.table,
) -> None:
    """Evaluate every model on every task under every protocol, one job per model; cells already stored are skipped."""
    if ctx.invoked_subcommand is not None:
        return
    from ...core.errors import EmbenchError
    from ...core.paths import check_folder_option
    from ...grid import GridSpec, expand_models, read_protocols, run_grid
    from ...grid.sharded import parse_devices

    if not models or results is None:
        raise EmbenchError("embench grid needs --models and --results (see embench grid --help); "
                           "`embench grid status DIR` shows a grid's cells")
    check_folder_option(results, "--results")
    if opts["batch_size"] is not None and opts["batch_size"] < 1:  # said now, not by every job's worker in a traceback
        raise EmbenchError(f"--batch-size must be at least 1, got {opts['batch_size']}")
    slurm = _slurm_settings(ctx, executor, slurm_option)
    origins: dict[str, str] = {}  # a list file's line per model: a model that fails to load names it
    spec = GridSpec(
        models=expand_models(models, origins), tasks=list(task or []), protocols=read_protocols(protocols),
        suite=suite if suite or task else "sts-all",
        model_options={k: opts[k] for k in ("pooling", "max_length", "dtype", "device", "revision", "prompt_name")},
        data=str(opts["data"]) if opts["data"] else None, cache_dir=str(opts["cache_dir"]) if opts["cache_dir"] else None,
        batch_size=opts["batch_size"], devices=parse_devices(devices), origins=origins,
    )
    if executor == "local":  # the jobs run here: a device this machine lacks is said before any job exists
        from ...models.device_choice import pick_device

        for d, option in [*((d, "--devices") for d in spec.devices), *([(opts["device"], "--device")] if opts["device"] else [])]:
            pick_device(d, option)
    err.print(f"grid: {len(spec.models)} model(s) x {len(spec.protocols)} protocol(s); planning ...", highlight=False)
    try:
        # every worker's lines reach stderr as they are written: a piped grid is never silent while it runs
        p = run_grid(spec, results, executor=executor, workers=workers, slurm=slurm, dry_run=dry_run, echo=sys.stderr)
    except KeyboardInterrupt:
        raise interrupted("[yellow]interrupted[/]: finished cells are stored; run the same command again to do the rest.") from None
    todo = sum(len(j.cells) for j in p.jobs)
    err.print(f"{len(p.cells)} cells, {len(p.cells) - todo} already done or running, {todo} in {len(p.jobs)} job(s)",
              highlight=False)
    _say_unknown(p, results)
    if dry_run:
        where = p.sbatch or (Path(results) / ".grid" / "jobs")
        err.print(f"dry run: nothing submitted; see {escape(str(where))}", highlight=False)
        return
    if executor == "slurm" and p.submitted:
        ids = sorted({str(j.job_id).split("_")[0] for j in p.submitted})
        err.print(f"submitted Slurm array {', '.join(ids)}; `embench grid status {escape(str(results))}` follows it",
                  highlight=False)
        return
    if executor == "slurm" and not p.count("unknown"):
        err.print("nothing submitted: every cell is stored or held by a pending or running Slurm job", highlight=False)
    if _print_status(p.cells, p.states, value(fmt)):
        raise typer.Exit(1)


def _say_unknown(p, results: Path) -> None:
    """Cells whose Slurm job cannot be ruled out (neither sacct nor squeue answers) are not submitted: said, with the
    jobs, rather than left to look done or running."""
    from ...grid.slurm_jobs import submitted_dir

    jobs = sorted({st.get("slurm_job", "?") for st in p.states.values() if st["state"] == "unknown"})
    if jobs:
        err.print(f"{p.count('unknown')} cell(s) not submitted: their Slurm job(s) {', '.join(jobs)} may still be pending "
                  "or running, and neither sacct nor squeue answers here; run this where Slurm answers (`embench grid "
                  "status` names the cells), or, once those jobs are known to have ended, delete their files in "
                  f"{escape(str(submitted_dir(results)))}", highlight=False)


@grid_app.command("status")
def status(results: ResultsDirArg, fmt: FmtOpt = Fmt.table) -> None:
    """Each cell of the grids run into DIR: done, running, failed (with its log), missing, or unknown (its Slurm job's state cannot be told)."""
    from ...grid.status import grid_status

    cells, states = grid_status(results)
    if _print_status(cells, states, value(fmt)):
        raise typer.Exit(1)
