"""``embench analyze NAME --model X [--model Y ...] --out DIR``: one analysis, several models, one figure.

Options common to several analyses have their own flags (``--dataset``, ``--limit``, ``--seed``,
...); any other option of an analysis is given as ``--set KEY=VALUE`` (repeatable; a comma makes a
list). ``embench analyze list`` shows every analysis with its options and defaults. Several analyses
joined by commas (``embench analyze attention,cls-energy,token-dependency``) run on models loaded once,
and the per-token ones share one forward pass per batch; each flag goes to the analyses that have it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ...core.errors import EmbenchError
from ...core.paths import check_folder_option
from ...core.values import parse_value
from ..option_groups import ENCODING, Given, shared_options
from ..options import SEED_MAX
from ..output import emit

RENAMES = {"dataset": ("datasets", "dataset"), "sentence": ("sentences",)}


def build_options(name: str, known: dict[str, Any], flags: dict[str, list[str] | str | int | None], sets: list[str],
                  strict: bool = True) -> dict[str, Any]:
    """Map CLI flags and ``--set`` pairs onto the analysis' own option names and types (``strict=False``:
    skip what this analysis does not have, when several analyses run together)."""
    opts: dict[str, Any] = {}
    for flag, value in flags.items():
        if value is None or value == []:
            continue
        target = next((t for t in RENAMES.get(flag, (flag,)) if t in known), None)
        if target is None and not strict:
            continue
        if target is None:
            raise EmbenchError(f"analysis {name!r} has no --{flag} option; its options are: {', '.join(known)}")
        values = value if isinstance(value, list) else [value]
        if isinstance(known[target], tuple):
            opts[target] = [parse_value(str(v), None) if not isinstance(v, str) else v for v in values]
        elif len(values) > 1:
            raise EmbenchError(f"analysis {name!r} takes a single --{flag}")
        else:
            v = values[0]
            opts[target] = parse_value(v, known[target]) if isinstance(v, str) and target not in ("heads",) else v
    for pair in sets:
        key, sep, raw = pair.partition("=")
        key = key.strip().replace("-", "_")
        if sep and key not in known and not strict:
            continue
        if not sep or key not in known:
            raise EmbenchError(f"--set {pair!r}: expected KEY=VALUE with KEY one of: {', '.join(known)}")
        opts[key] = parse_value(raw.strip(), known[key])
    return opts


@shared_options("normalize", "pooling", "max_length", "prompt", "prompt_name", "revision", "bidirectional_last", "bidirectional_mode", "adapter", *ENCODING, "data", "cache_dir", "no_cache")
def analyze(
    name: Annotated[str, typer.Argument(help="Analysis name, several joined by commas (run together: per-token analyses share one forward pass), or 'list'.")],
    model: Annotated[list[str] | None, typer.Option("--model", "-m", help="Model name, alias or folder; repeat to overlay several.")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Folder for the CSV/JSON numbers and PNG/PDF figures.")] = None,
    label: Annotated[list[str] | None, typer.Option("--label", help="Figure label per --model, in the same order.")] = None,
    dataset: Annotated[list[str] | None, typer.Option("--dataset", help="Labelled set(s): twentynewsgroups, banking77, emotion, agnews, trec.")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Use a seeded random subset of this many examples/sentences.")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed for splits, subsets and t-SNE.", min=0, max=SEED_MAX)] = None,
    layers: Annotated[str | None, typer.Option(help="layers: which hidden layers, e.g. '0,3,6' (default all); layer-removal: numbers of layers kept, 1 to L.")] = None,
    sentence: Annotated[list[str] | None, typer.Option("--sentence", help="attention: sentence(s) whose maps are drawn.")] = None,
    heads: Annotated[str | None, typer.Option(help="attention: mean or a head number; cls-energy: concat or mean.")] = None,
    metric: Annotated[list[str] | None, typer.Option("--metric", help="kNN distance: euclidean, cosine (repeatable for knn).")] = None,
    transform: Annotated[list[str] | None, typer.Option("--transform", help="kNN embeddings: raw, centred, whitened (repeatable for knn).")] = None,
    k: Annotated[int | None, typer.Option("--k", min=1, help="Neighbours for kNN (default 10).")] = None,
    split: Annotated[str | None, typer.Option(help="STS-B split for STS-B based analyses (default test; layer-removal: dev).")] = None,
    text: Annotated[str | None, typer.Option(help="STS-B text: senteval (tokenised, lower-cased) or raw.")] = None,
    suite: Annotated[str | None, typer.Option(help="layers: also score every layer on a suite (mteb-lite: block average) or comma-separated tasks.")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Any other option of the analysis, KEY=VALUE (see 'embench analyze list').")] = None,
    opts: Given | None = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No table or progress output.")] = False,
) -> None:
    """Run one analysis (geometry, kNN, layers, attention, t-SNE, token dependency) and draw its figure."""
    from ...tasks.names import check_names

    # names first, before the analyses (and torch) load: --suite is a suite or comma-separated tasks
    check_names(**({"tasks": suite.split(",")} if suite and "," in suite else {"suite": suite}), pooling=opts["pooling"])
    from ...analysis.registry import get, run_many

    if name == "list":
        _list_analyses()
        return
    names = [n.strip() for n in name.split(",") if n.strip()]
    fns = {n: get(n) for n in names}  # did-you-mean on a typo, before anything loads
    if not model:
        raise EmbenchError("give at least one --model")
    if out is None:
        raise EmbenchError("give --out DIR: the folder the numbers and figures go to")
    check_folder_option(out, "--out")
    if layers not in (None, "all"):
        from ...analysis.layers import layer_list

        layer_list(layers)  # before any model loads
    flags = {"dataset": dataset, "limit": limit, "seed": seed, "layers": layers, "sentence": sentence, "heads": heads,
             "metric": metric, "transform": transform, "k": k, "split": split, "text": text,
             "suite": suite}
    common = dict(labels=label or None, progress=not quiet, **opts.api())
    if len(names) == 1:
        # an option of the analysis named like a shared one (batch_size) wins: it was given twice and raised TypeError
        own = build_options(name, fns[name].options, flags, set_ or [])
        results = [fns[name](list(model), out, **{**common, **own})]
    else:
        results = list(run_many(names, list(model), out, _options_for_many(fns, flags, set_ or []), **common).values())
    if not quiet:
        for result in results:
            _print_result(result)


def _options_for_many(fns: dict[str, Any], flags: dict[str, Any], sets: list[str]) -> dict[str, dict[str, Any]]:
    """Each analysis' options from the shared flags; a flag or --set key that none of them has is an error."""
    per = {n: build_options(n, fn.options, flags, sets, strict=False) for n, fn in fns.items()}
    given = [f for f, v in flags.items() if v not in (None, [])] + [s.partition("=")[0].strip().replace("-", "_") for s in sets]
    for g in given:
        if not any(t in fn.options for fn in fns.values() for t in RENAMES.get(g, (g,))):
            raise EmbenchError(f"none of the analyses {', '.join(fns)} has a --{g} option")
    return per


def _list_analyses() -> None:
    """Every analysis with its options and their defaults."""
    from rich.markup import escape

    from ...analysis.registry import ANALYSES
    from ..output import message_console

    out = message_console(stderr=False)
    for n, analysis in ANALYSES.items():  # a broken plug-in is left out with a warning
        opts = ", ".join(f"{k}={v!r}" for k, v in analysis.options.items())
        out.print(f"[bold]{escape(n)}[/]  {escape(ANALYSES.description(n))}", highlight=False)
        out.print(f"    options: {escape(opts)}", highlight=False, style="dim")


def _print_result(result) -> None:
    """The analysis' small tables on stdout, then the files it wrote."""
    from ...report.tables import render
    from ..output import message_console

    for stem, frame in result.tables.items():
        if len(frame) <= 60:
            emit(render(frame.round(4), "table", scaled=[], title=stem))
    for f in result.files:
        message_console(stderr=False).print(f"wrote {f}", highlight=False, soft_wrap=True)
