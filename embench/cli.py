"""The command line: parse options, call the API, render with rich. No logic of its own."""

from __future__ import annotations

import logging
import os
import sys
import warnings
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from .core.errors import EmbenchError

app = typer.Typer(
    help="Benchmark and analyse sentence embeddings under every evaluation protocol.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
data_app = typer.Typer(help="The data root: check it, download into it.", no_args_is_help=True)
results_app = typer.Typer(help="Stored result records.", no_args_is_help=True)
app.add_typer(data_app, name="data")
app.add_typer(results_app, name="results")
out = Console()
err = Console(stderr=True)


class Fmt(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"
    latex = "latex"


class Aggregation(str, Enum):
    all = "all"
    mean = "mean"
    wmean = "wmean"


class Correlation(str, Enum):
    spearman = "spearman"
    pearson = "pearson"


class Text(str, Enum):
    senteval = "senteval"
    raw = "raw"


class SickSplit(str, Enum):
    test = "test"
    full = "full"


class Similarity(str, Enum):
    cosine = "cosine"
    dot = "dot"


class Scoring(str, Enum):
    cosine = "cosine"
    regressor = "regressor"


class Classifier(str, Enum):
    default = "default"
    prototyping = "prototyping"


class PairFeatures(str, Enum):
    uv = "uv"
    senteval_code = "senteval-code"


class DType(str, Enum):
    fp32 = "fp32"
    bf16 = "bf16"
    fp16 = "fp16"


DataOpt = Annotated[Path | None, typer.Option("--data", help="Data root (default: $EMBENCH_DATA, then ~/.cache/embench/data).")]
ResultsOpt = Annotated[Path | None, typer.Option("--results-dir", help="Where result records go (default: $EMBENCH_RESULTS, then ./results).")]
FmtOpt = Annotated[Fmt, typer.Option("--format", "-f", help="Output format on stdout.")]


def _val(x):
    return x.value if isinstance(x, Enum) else x


@app.command()
def run(
    model: Annotated[list[str], typer.Option("--model", "-m", help="Model name, alias or folder; repeat for several.")],
    suite: Annotated[str | None, typer.Option("--suite", "-s", help="Suite name (embench list suites).")] = None,
    task: Annotated[list[str] | None, typer.Option("--task", "-t", help="Task(s) to run, after the suite's when --suite is given too; repeatable.")] = None,
    aggregation: Annotated[Aggregation | None, typer.Option(help="STS12-16: all (one correlation over all subsets), mean, wmean.")] = None,
    correlation: Annotated[Correlation | None, typer.Option(help="Correlation reported as the main score.")] = None,
    text: Annotated[Text | None, typer.Option(help="senteval (tokenised, lower-cased) or raw (original releases).")] = None,
    sick_split: Annotated[SickSplit | None, typer.Option(help="SICK-R: test (4,927 pairs) or full (9,927, as MTEB).")] = None,
    similarity: Annotated[Similarity | None, typer.Option(help="Similarity of two embeddings.")] = None,
    scoring: Annotated[Scoring | None, typer.Option(help="STS-B/SICK-R: cosine, or SentEval's trained regressor.")] = None,
    classifier: Annotated[Classifier | None, typer.Option(help="Transfer tasks: SentEval classifier config.")] = None,
    pair_features: Annotated[PairFeatures | None, typer.Option(help="MRPC/SICK-E classifier input: uv = [u,v,|u-v|,u*v] (default), senteval-code = [|u-v|,u*v].")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed for tasks that sample or train (default 1111).")] = None,
    normalize: Annotated[bool | None, typer.Option("--normalize/--no-normalize", help="L2-normalise embeddings (default: the model's own).")] = None,
    pooling: Annotated[str | None, typer.Option(help="Pooler (embench list poolers); default: the model's own.")] = None,
    layer: Annotated[int | None, typer.Option(help="Hidden layer to pool (0 = embedding output; default last).")] = None,
    max_length: Annotated[int | None, typer.Option(help="Maximum tokens per text (default: the model's).")] = None,
    dtype: Annotated[DType, typer.Option(help="Inference precision (bf16/fp16 via autocast).")] = DType.fp32,
    device: Annotated[str | None, typer.Option(help="cpu, cuda, cuda:1, ... (default: CUDA when present).")] = None,
    batch_size: Annotated[int, typer.Option(help="Texts per batch.")] = 128,
    data: DataOpt = None,
    results_dir: ResultsOpt = None,
    cache_dir: Annotated[Path | None, typer.Option(help="Embedding cache (default: $EMBENCH_CACHE, then ~/.cache/embench/embeddings).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the embedding cache.")] = False,
    overwrite: Annotated[bool, typer.Option(help="Recompute tasks that already have a stored record.")] = False,
    fmt: FmtOpt = Fmt.table,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress output on stderr.")] = False,
) -> None:
    """Evaluate model(s) on a suite or tasks; print the table and store one record per task."""
    from .api import evaluate, resolve_tasks

    if suite is None and not task:
        suite = "sts-all"
    _, view = resolve_tasks(suite, task)
    records = []
    for name in model:
        def on_task(t: str, status: str, record, name=name) -> None:
            if not quiet:
                how = "stored record reused" if status == "stored" else f"{record.provenance.get('wall_seconds', 0):.1f}s"
                err.print(f"[dim]{name}[/] {record.display}: {100 * record.main_score:.2f} ({how})")

        try:
            ev = evaluate(
                name, suite, tasks=task, data=data, results_dir=results_dir, cache_dir=cache_dir,
                use_cache=not no_cache, overwrite=overwrite, batch_size=batch_size, progress=not quiet and err.is_terminal,
                on_task=on_task, aggregation=_val(aggregation), correlation=_val(correlation), text=_val(text),
                sick_split=_val(sick_split), similarity=_val(similarity), classifier=_val(classifier), seed=seed, scoring=_val(scoring),
                pair_features=_val(pair_features),
                normalize=normalize, pooling=pooling, layer=layer,
                max_length=max_length, dtype=_val(dtype), device=device,
            )
        except KeyboardInterrupt:
            err.print("[yellow]interrupted[/]: finished tasks are stored; run the same command again to resume.")
            raise typer.Exit(130) from None
        records += ev.records
    from .api import Evaluation

    shown = Evaluation(records=records, view=view)
    _emit(shown.render(_val(fmt)), fmt)


@app.command("list")
def list_(what: Annotated[str, typer.Argument(help="tasks, suites, poolers or models")] = "suites") -> None:
    """List registered tasks, suites, poolers or model aliases."""
    from .models.loader import ALIASES
    from .models.pooling import POOLERS
    from .suites import SUITES
    from .tasks import TASKS

    if what == "tasks":
        for n, t in TASKS.items():
            out.print(f"{n:<18} {t.kind:<10} {t.display}")
    elif what == "suites":
        for n, s in SUITES.items():
            out.print(f"{n:<10} {s.description}")
    elif what == "poolers":
        for n in POOLERS.names():
            out.print(n)
    elif what == "models":
        for n in ALIASES.names():
            out.print(n)
    else:
        raise EmbenchError(f"unknown list {what!r}; choose one of: tasks, suites, poolers, models")


@data_app.command("check")
def data_check(
    data: DataOpt = None,
    manifest: Annotated[Path | None, typer.Option(help="Manifest JSON (default: the packaged one).")] = None,
    fmt: FmtOpt = Fmt.table,
) -> None:
    """List every task with whether its files are present, row counts and checksum status."""
    import pandas as pd

    from .data.manifest import check
    from .data.root import DataRoot
    from .report.tables import render

    root = DataRoot.resolve(data)
    rows = check(root, manifest)
    frame = pd.DataFrame(rows).set_index("task")
    for c in ("missing", "differ"):
        frame[c] = frame[c].map(lambda xs: ", ".join(xs[:3]) + (f" (+{len(xs) - 3})" if len(xs) > 3 else ""))
    if fmt == Fmt.table:
        err.print(f"data root: {root.path}")
    _emit(render(frame, _val(fmt), scaled=[], title=None), fmt)


@data_app.command("download")
def data_download(
    task: Annotated[list[str] | None, typer.Option("--task", "-t", help="Only these tasks (default: all in the manifest).")] = None,
    data: DataOpt = None,
    manifest: Annotated[Path | None, typer.Option(help="Manifest JSON (default: the packaged one).")] = None,
    base_url: Annotated[str | None, typer.Option(help="Fetch every file from BASE_URL/<path> instead (a mirror).")] = None,
) -> None:
    """Fetch the public releases listed in the manifest into the data root, verifying sha256."""
    from .data.manifest import download
    from .data.root import DataRoot

    root = DataRoot.resolve(data)
    done = download(root, task, manifest, base_url)
    got = sum(1 for _, s in done if s == "downloaded")
    out.print(f"{got} downloaded, {len(done) - got} already present, into {root.path}")


@results_app.command("show")
def results_show(
    results_dir: ResultsOpt = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Only models whose name contains this.")] = None,
    task: Annotated[str | None, typer.Option("--task", "-t", help="Only this task.")] = None,
    fmt: FmtOpt = Fmt.table,
) -> None:
    """Print stored results: one row per model and protocol, tasks as columns."""
    import pandas as pd

    from .api import results
    from .report.tables import render

    recs = results(results_dir, model=model, task=task)
    if not recs:
        err.print("no stored results" + (f" in {results_dir}" if results_dir else ""))
        raise typer.Exit(1)
    rows: dict[tuple, dict] = {}
    for r in recs:
        p = r.protocol
        proto = f"{p.get('aggregation')}/{p.get('correlation')}/{p.get('text')}/sick={p.get('sick_split')}/{p.get('similarity')}"
        proto += "".join(f"/{k}={p[k]}" for k, d in (("scoring", "cosine"), ("classifier", "default"), ("pair_features", "uv"), ("seed", 1111)) if p.get(k, d) != d)
        enc = f"{r.encoder.get('pooling')}" + (f"@{r.encoder.get('layer')}" if r.encoder.get("layer") != r.encoder.get("num_layers") else "")
        rows.setdefault((r.model, enc, r.encoder.get("dtype"), proto), {})[r.display] = r.main_score
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index = pd.MultiIndex.from_tuples(frame.index, names=["model", "pooling", "dtype", "protocol"])
    frame = frame.reset_index()
    frame["Avg."] = frame.drop(columns=["model", "pooling", "dtype", "protocol"]).mean(axis=1, skipna=False)
    _emit(render(frame, _val(fmt), scaled=[c for c in frame.columns if c not in ("model", "pooling", "dtype", "protocol")]), fmt)


def _emit(text: str, fmt) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def main() -> None:
    """Entry point: user errors are printed as one clear message, without a traceback."""
    logging.basicConfig(level=os.environ.get("EMBENCH_LOG", "WARNING"), format="%(levelname)s %(name)s: %(message)s")
    warnings.filterwarnings("default", module="embench")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except ImportError:
        pass
    try:
        app()
    except EmbenchError as e:
        err.print(f"[bold red]error:[/] {e}", highlight=False, markup=True)
        sys.exit(2)


# Commands of the other modules (audit, analyze, train, ...) register themselves last, so they
# can import the shared options above.
from .commands import register_all  # noqa: E402

register_all(app)

if __name__ == "__main__":
    main()
