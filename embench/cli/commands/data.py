"""``embench data check | download``: the data root."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..options import DataOpt, Fmt, FmtOpt, value
from ..output import emit, err

data_app = typer.Typer(no_args_is_help=True)
ManifestOpt = Annotated[Path | None, typer.Option(help="Manifest JSON (default: the packaged one).")]


@data_app.command("check")
def check(data: DataOpt = None, manifest: ManifestOpt = None, fmt: FmtOpt = Fmt.table) -> None:
    """List every task with whether its files are present, row counts and checksum status."""
    import pandas as pd

    from ...data.root import DataRoot
    from ...report.tables import render
    from ...tasks.data_check import check as check_tasks

    root = DataRoot.resolve(data)
    frame = pd.DataFrame(check_tasks(root, manifest)).set_index("task")
    for c in ("missing", "differ"):
        frame[c] = frame[c].map(lambda xs: ", ".join(xs[:3]) + (f" (+{len(xs) - 3})" if len(xs) > 3 else ""))
    if fmt == Fmt.table:
        err.print(f"data root: {root.path}")
    emit(render(frame, value(fmt), scaled=[], title=None))


@data_app.command("download")
def download(
    task: Annotated[list[str] | None, typer.Option("--task", "-t", help="Only these tasks (default: all in the manifest).")] = None,
    data: DataOpt = None,
    manifest: ManifestOpt = None,
    base_url: Annotated[str | None, typer.Option(help="Fetch every file from BASE_URL/<path> instead (a mirror).")] = None,
) -> None:
    """Fetch the public releases listed in the manifest into the data root, verifying sha256."""
    from ...data.manifest import download as fetch
    from ...data.root import DataRoot
    from ...tasks import TASKS

    root = DataRoot.resolve(data)
    names = [TASKS.canonical(t) if t in TASKS else t for t in task or []]  # aliases (STS-B) -> manifest names
    done = fetch(root, names, manifest, base_url)
    got = sum(1 for _, s in done if s == "downloaded")
    emit(f"{got} downloaded, {len(done) - got} already present, into {root.path}")
