"""``embench compare``: is model A better than model B, task by task, beyond the noise of the test sets?

The model options apply to both sides alike; ``--set-a`` / ``--set-b KEY=VALUE`` set one side's alone (one checkpoint
under two poolings, layers or prompts: :mod:`embench.cli.side_options`)."""

from __future__ import annotations

import warnings
from typing import Annotated

import typer
from rich.markup import escape

from ..option_groups import ENCODING, MODEL, VECTORS, Given, protocol_options, shared_options
from ..options import CISeedOpt, Fmt, FmtOpt, QuietOpt, ResamplesOpt, choice_enum, value
from ..output import emit, err
from ..side_options import HELP, side_settings

Test = choice_enum("Test", ("bootstrap", "permutation", "steiger"))


@protocol_options()
@shared_options(*MODEL, *ENCODING, "data", "results_dir", "cache_dir", "no_cache", "task_file", *VECTORS)
def compare(
    ctx: typer.Context,
    model: Annotated[list[str], typer.Option("--model", "-m", help="The two models: --model A --model B (a seed group folder from `train --seeds` counts as one; one model twice with --set-b compares two of its settings).")],
    suite: Annotated[str | None, typer.Option("--suite", "-s", help="Suite name (default sts-all).")] = None,
    task: Annotated[list[str] | None, typer.Option("--task", "-t", help="Task(s), after the suite's; repeatable.")] = None,
    protocol: dict[str, str] | None = None,
    test: Annotated[Test, typer.Option("--test", help="The test behind each verdict: paired bootstrap, paired permutation, or Steiger's (Pearson). A seed group is always compared by a hierarchical bootstrap over its seeds and the items.")] = Test.bootstrap,  # type: ignore[valid-type]
    alpha: Annotated[float, typer.Option("--alpha", help="Significance level, after Holm's correction over tasks.")] = 0.05,
    ci: Annotated[float, typer.Option("--ci", help="Level of the difference's bootstrap interval: 95 or 0.95 (below 1 a fraction, from 1 to 100 a percentage).")] = 95,
    resamples: ResamplesOpt = None,
    ci_seed: CISeedOpt = None,
    set_a: Annotated[list[str] | None, typer.Option("--set-a", metavar="KEY=VALUE", help=HELP.format(side="A", other="--set-b", b="B"))] = None,
    set_b: Annotated[list[str] | None, typer.Option("--set-b", metavar="KEY=VALUE", help=HELP.format(side="B", other="--set-a", b="A"))] = None,
    opts: Given | None = None,
    fmt: FmtOpt = Fmt.table,
    quiet: QuietOpt = False,
) -> None:
    """Paired significance tests of two models on the same items: per task and Avg., Holm-corrected.

    One model under two settings too: -m X -m X --set-b pooling=cls (model options apply to both sides; --set-a and
    --set-b to one, and win over them)."""
    from ...core.errors import EmbenchError
    from ...tasks.names import check_names, with_task_files

    if len(model) != 2:
        raise EmbenchError(f"--model: give exactly two models to compare (got {len(model)}); --model A --model B")
    from ...evaluation.side_settings import check_two_sides, described

    own = [side_settings(ctx, set_a, "--set-a"), side_settings(ctx, set_b, "--set-b")]
    shared = opts.api()
    check_two_sides(model, [{**shared, **o} for o in own], ("--model", "--set-b pooling=cls"))  # as typed, not options_b=
    task = with_task_files(opts["task_file"], task)  # a task file's rows are checked here too
    check_names(suite or (None if task else "sts-all"), task)  # before the model stack loads
    for pooling in {o.get("pooling", shared["pooling"]) for o in own}:
        check_names(pooling=pooling)
    from ...api import compare as compare_models
    from ...evaluation.comparison import render_comparison
    from ...evaluation.seed_comparison import FewSeedsWarning

    if not quiet:
        a, b = (m + (f" [{described(o)}]" if o else "") for m, o in zip(model, own, strict=True))
        err.print(f"comparing {escape(a)} (A) with {escape(b)} (B) ...", highlight=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewSeedsWarning)  # printed below as one plain line, not as a Python warning
        c = compare_models(
            model[0], model[1], suite, tasks=task, test=value(test), alpha=alpha, ci=ci, resamples=resamples, ci_seed=ci_seed,
            progress=not quiet, options_a=own[0], options_b=own[1], **shared, **(protocol or {}),
        )
    for line in c.warnings:  # even with -q: a verdict resting on two seeds must not pass unnoticed
        err.print(f"[yellow]warning:[/] {escape(line)}", highlight=False, soft_wrap=True)
    emit(render_comparison(c, value(fmt)))
