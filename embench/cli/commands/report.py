"""``embench report``: stored results as the tables papers print (LaTeX, markdown, CSV) or one HTML page
with the tables and the figures composed from analysis outputs."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ...core.atomic import OutputNotWritten, write_output
from ...core.errors import EmbenchError
from ...core.paths import check_folder_option, not_there
from ...report.formats import REPORT_FORMATS
from ..options import choice_enum, value
from ..output import emit, err
from .results import nothing_matches, stored_folder

ReportFmt = choice_enum("ReportFmt", REPORT_FORMATS)
Split = choice_enum("Split", ("tables", "rows"))


def _names(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in pairs:
        model, sep, label = p.partition("=")
        if not sep or not model or not label:
            raise typer.BadParameter(f"{p!r}: expected MODEL=LABEL, e.g. all-MiniLM-L6-v2=MiniLM", param_hint="--name")
        if out.get(model, label) != label:  # the last one kept without a word: which one the tables show is no guess
            raise typer.BadParameter(f"{model} is named twice ({out[model]}, {label}); give each model one name",
                                     param_hint="--name")
        out[model] = label
    return out


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"  # a PNG's first 8 bytes: a file named .png that is not one embedded as a broken image


def _is_png(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(8) == PNG_SIGNATURE


def report(
    results: Annotated[list[Path] | None, typer.Option("--results-dir", "--results", help="Results folder (made by `embench run --results-dir`); repeat for several (default, without --analysis or --image: $EMBENCH_RESULTS, then ./results).")] = None,
    model: Annotated[list[str] | None, typer.Option("--model", "-m", help="Only these models (as stored); rows in this order of colours; repeatable.")] = None,
    suite: Annotated[str | None, typer.Option("--suite", "-s", help="Only the suite's tasks, in its order.")] = None,
    task: Annotated[list[str] | None, typer.Option("--task", "-t", help="Only these tasks (after the suite's); repeatable.")] = None,
    fmt: Annotated[ReportFmt, typer.Option("--format", "-f", help="latex (booktabs, Styler.to_latex), markdown, csv, or html (one self-contained page).")] = ReportFmt.latex,  # type: ignore[valid-type]
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write here (default: stdout). With --analysis, figures go to OUT's folder, <stem>-figures/.")] = None,
    name: Annotated[list[str] | None, typer.Option("--name", help="Display name of a model in tables and legends: MODEL=LABEL; repeatable.")] = None,
    caption: Annotated[str | None, typer.Option("--caption", help="Table caption (default: what the table holds).")] = None,
    split: Annotated[Split | None, typer.Option("--split", help="Records of several protocols: a table per protocol, or a row per model and protocol (SimCSE Table B.2); default: an error.")] = None,  # type: ignore[valid-type]
    lower: Annotated[list[str] | None, typer.Option("--lower-is-better", help="Column whose smallest value is best; repeatable.")] = None,
    standalone: Annotated[bool, typer.Option("--standalone", help="LaTeX: a whole document pdflatex compiles (article + booktabs).")] = False,
    analysis: Annotated[list[Path] | None, typer.Option("--analysis", "-a", help="Folder of `embench analyze`/`train` outputs to draw figures from; repeatable.")] = None,
    figure: Annotated[list[str] | None, typer.Option("--figure", help="Figures to draw (default: every one whose output is found): "
                                                      "spectrum, alignment-uniformity, cosine-density, layers, cls-energy, attention-sinks, layer-removal, "
                                                      "token-dependency, knn, training-loss, training-eval, training-knn.")] = None,
    image: Annotated[list[Path] | None, typer.Option("--image", help="HTML: a PNG made elsewhere (e.g. `embench analyze tsne`) to embed as it is; repeatable.")] = None,
    title: Annotated[str | None, typer.Option("--title", help="HTML page title (default: embench report).")] = None,
) -> None:
    """Paper tables from stored results (best bold, second underlined, Avg. recomputed, protocol footnote); figures from analysis outputs."""
    from ...evaluation.scan import NoMatchingRecords, scan_results
    from ...report import figures as figs
    from ...report.html_page import figure_html, page
    from ...report.paper_render import render_tables, to_html
    from ...tasks.report_tables import tables_of_records

    fmt_ = value(fmt)
    names = _names(name or [])
    if not results and not analysis and not image:  # the folder `results show` reads (and `run` writes)
        results = [None]
    if out is not None:
        if out.is_dir():
            raise EmbenchError(f"--out {out} is a folder; give the name of the file to write")
        check_folder_option(out.parent, "--out's folder")
        if analysis:  # a file there was a traceback once the tables were read, where --out's own check is one line
            if (fig_dir := _figures_folder(out)).exists() and not fig_dir.is_dir():
                raise EmbenchError(f"--out {out}: its figures go to {fig_dir}, which is a file; move it or give another --out")
            check_folder_option(fig_dir, f"--out {out}: its figures folder")
    for n in figure or ():
        figs.composer(n)  # an unknown name is an error before anything is read or drawn
    if figure and not analysis:  # else drawn from nothing without a word
        raise typer.BadParameter("--figure draws from analysis outputs; give --analysis DIR (the folder of "
                                 "`embench analyze` or `embench train` outputs)", param_hint="--figure")
    _check_format_options(fmt_, image=bool(image), title=title is not None, standalone=standalone, caption=caption is not None)
    for path in image or []:  # before any table is read or figure drawn
        if not path.is_file() or path.suffix.lower() != ".png" or not _is_png(path):
            why = not_there(path) if not path.is_file() else "is not a PNG file (.png, and a PNG's first bytes)"
            raise typer.BadParameter(f"{path} {why}", param_hint="--image")
    tables, problems, scanned = [], [], []
    if results:
        results = [stored_folder(r) for r in results]  # a folder that does not exist: nothing to show (exit 1)
        scanned, found_problems = scan_results(results)  # read once: for the task names, the tables and --name alike
        _check_task_names(task, scanned)
        where = ", ".join(map(str, results))
        try:
            with warnings.catch_warnings():  # its unused-name warning: _warn_unused_names below also reads the analyses
                warnings.filterwarnings("ignore", message="names: no record has")
                tables, problems = tables_of_records(scanned, found_problems, results, models=model or (), suite=suite,
                                                     tasks=task, names=names, split=value(split),
                                                     lower_is_better=lower or (), caption=caption)
        except NoMatchingRecords as e:
            nothing_matches(where, e.held, {"--model": model, "--suite": [suite] if suite else None, "--task": task})
    for path, problem in problems:
        err.print(f"[yellow]skipped[/] {path}: {problem} (the other records are reported)")
    _warn_unused_names(names, scanned, analysis)
    made: list[tuple[Path, str]] = []
    if analysis:
        if out is None:
            raise typer.BadParameter("figures need --out (they are written beside it)", param_hint="--out")
        fig_dir = _figures_folder(out)
        wanted = figure or [n for n, c in figs.COMPOSERS.items() if len(figs.read_output(analysis, c.file))]
        models = model or []  # as -m gives them: a figure matches them as the tables do, and labels by --name
        if not models:  # one colour per model across every figure: the union of the models found, in order
            found = [m for n in wanted for m in figs.read_output(analysis, figs.COMPOSERS[n].file)["model"]]
            colours = figs.model_colours(list(dict.fromkeys(found)))
        else:
            colours = figs.model_colours(models)
        for n in wanted:
            try:
                paths = figs.compose(n, analysis, fig_dir, models=models, colours=colours, names=names)
            except EmbenchError as e:
                if figure or isinstance(e, OutputNotWritten):  # asked for by name, or a full disk: not just skipped
                    raise
                err.print(f"[yellow]no figure {n}[/]: {e}")
                continue
            made.append((paths[0], figs.COMPOSERS[n].caption))
            err.print(f"figure {n}: {', '.join(map(str, paths))}")
    for path in image or []:
        made.append((path, f"{path.parent.name}/{path.name}" if path.parent.name else path.name))  # not "/spec.png"
    if fmt_ == "html":
        sections = [("table", to_html(t, i)) for i, t in enumerate(tables)]
        if made:
            sections.append(("Figures", '<div class="gallery">' + "".join(figure_html(p, c) for p, c in made) + "</div>"))
        text = page(title or "embench report", sections)
    else:
        text = render_tables(tables, fmt_, standalone=standalone) if tables else ""
    if out is None:
        emit(text)
    else:
        write_output(out, text, "--out")  # whole or not at all: a full disk keeps the previous report
        err.print(f"wrote {out}")


def _figures_folder(out: Path) -> Path:
    """Where the figures of a report written to ``out`` go: ``<stem>-figures`` beside it."""
    return out.parent / f"{out.stem}-figures"


def _check_task_names(tasks: list[str] | None, records: list) -> None:
    """A ``--task`` that is neither a task (name or alias, any case) nor stored (a task file's task, by its own or its
    table's name) is the registry's error with the nearest names, as every other command says it (it was "no stored
    results for task(s) STS99")."""
    from ...tasks import TASKS

    if unregistered := [t for t in tasks or () if t not in TASKS]:  # only these are looked up among the stored names
        stored = {n.lower() for r in records for n in (r.task, r.display)}
        for t in unregistered:
            if t.lower() not in stored:
                TASKS.canonical(t)  # unknown task 'STS99'. Did you mean 'STS16', ... (an mteb name it registers)


# options that only one format uses: (its format, what it does there); with another format they would be ignored
FORMAT_OPTIONS = {"image": ("html", "puts a PNG into the HTML report"), "title": ("html", "titles the HTML page"),
                  "standalone": ("latex", "makes the LaTeX a document pdflatex compiles")}


def _check_format_options(fmt: str, caption: bool, **given: bool) -> None:
    """Refuse an option the format asked for does not use, where it was left out without a word."""
    for option, (wanted, what) in FORMAT_OPTIONS.items():
        if given[option] and fmt != wanted:
            raise typer.BadParameter(f"--{option} {what}; give --format {wanted} (not {fmt})", param_hint=f"--{option}")
    if caption and fmt == "csv":  # CSV has no caption (latex, markdown and html print it)
        raise typer.BadParameter("--caption titles a LaTeX, markdown or HTML table; CSV has no caption", param_hint="--caption")


def _warn_unused_names(names: dict[str, str], records: list, analysis: list[Path] | None) -> None:
    """A --name whose model is in no record (those the tables were read from) and no analysis output would be ignored
    without a word."""
    if not names:
        return
    from ...report import figures as figs
    from ...report.model_match import same_model

    seen = {r.model for r in records}
    for composer in figs.COMPOSERS.values() if analysis else ():
        seen.update(figs.read_output(analysis, composer.file)["model"].astype(str))
    for model, label in names.items():
        if not any(same_model(s, model) for s in seen):  # as tables and figures match it
            known = ", ".join(sorted(seen)) or "none"
            err.print(f"[yellow]warning:[/] --name {escape(model)}={escape(label)}: no record or analysis output has "
                      f"the model {escape(model)!r}, so the name is not used (models found: {escape(known)})",
                      highlight=False, soft_wrap=True)
