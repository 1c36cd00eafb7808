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
def check(
    data: DataOpt = None,
    manifest: ManifestOpt = None,
    fmt: FmtOpt = Fmt.table,
    files: Annotated[bool, typer.Option("--files", help="One row per file (ok, differs, corrupt, missing, unlisted) instead of one per task or dataset.")] = False,
) -> None:
    """List every task and dataset (or, with --files, every file) with presence, row counts and checksum status."""
    from collections import Counter

    import pandas as pd

    from ...data.manifest import check_manifest_files
    from ...data.root import DataRoot
    from ...data_names import dataset_rows
    from ...report.tables import render
    from ...tasks.data_check import check as check_tasks

    root = DataRoot.resolve(data).require()
    per_file = check_manifest_files(root, manifest)
    if files:
        frame = pd.DataFrame(per_file).set_index("path")
    else:
        frame = pd.DataFrame(check_tasks(root, manifest) + dataset_rows(root, manifest)).set_index("task")
        for c in ("missing", "differ"):
            frame[c] = frame[c].map(lambda xs: ", ".join(xs[:3]) + (f" (+{len(xs) - 3})" if len(xs) > 3 else ""))
    if fmt == Fmt.table:
        err.print(f"data root: {root.path}")
    emit(render(frame, value(fmt), scaled=[], title=None))
    if fmt == Fmt.table:
        counts = Counter(r["status"] for r in per_file)
        err.print(f"{len(per_file)} files: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    damaged = [r["path"] for r in per_file if r["status"] in ("differs", "corrupt")]
    if damaged:  # a missing file is a partial root (fine); a damaged one gives wrong numbers: the exit status says so
        err.print(f"[bold red]{len(damaged)} damaged file(s)[/] (differs or corrupt), e.g. {damaged[0]}: fetch them again "
                  "with `embench data download` (it replaces damaged files), or see them with --files", highlight=False)
        raise typer.Exit(1)
    if per_file and all(r["status"] in ("missing", "unlisted") for r in per_file):  # a partial root is fine; an empty one is a wrong path
        err.print(f"[bold red]no file of the manifest is in {root.path}[/]: is --data (or EMBENCH_DATA) the data root? "
                  "Fetch the files with `embench data download`", highlight=False)
        raise typer.Exit(1)


@data_app.command("download")
def download(
    task: Annotated[list[str] | None, typer.Option("--task", "-t", help="Only the files these read: task names or aliases (STS-B, MTEB:SciFact), analysis datasets (banking77, 20newsgroups), training sets (corpora, snli). Default: every file of the manifest.")] = None,
    data: DataOpt = None,
    manifest: ManifestOpt = None,
    base_url: Annotated[str | None, typer.Option(help="Fetch every file from BASE_URL/<path> instead (a mirror).")] = None,
    from_hub: Annotated[bool, typer.Option("--from-hub", help="MTEB tasks (-t MTEB:NAME): copy their Hugging Face dataset, at the revision mteb pins, into <data>/mteb/<task>/ (needs embench[mteb] and the hub).")] = False,
    hub_mirror: Annotated[Path | None, typer.Option(help="With --from-hub: a local folder of <repo_id>/ trees to copy from instead of the hub.")] = None,
    accept_mismatch: Annotated[bool, typer.Option("--accept-mismatch", help="Store a file whose checksum differs from the manifest's (reported; `data check` then says 'differs'). For entries the manifest marks as never compared with upstream.")] = False,
) -> None:
    """Fetch the public releases listed in the manifest into the data root, verifying sha256."""
    from ...data.manifest import download as fetch
    from ...data.root import DataRoot
    from ...data_names import manifest_paths

    root = DataRoot.resolve(data)
    _check_download_options(root.path, base_url, from_hub, hub_mirror)  # once, not as a failure of every file
    if from_hub:
        _from_hub(root, task or [], hub_mirror)
        return
    paths = manifest_paths(task, manifest) if task else None
    # every file is tried: one that cannot be fetched or verified does not stop the others
    done = fetch(root, None, manifest, base_url, paths=paths, keep_going=True, accept_mismatch=accept_mismatch)
    failed = [(p, s.removeprefix("failed: ")) for p, s in done if s.startswith("failed")]
    differs = [p for p, s in done if s.endswith("checksum differs")]
    got = sum(1 for _, s in done if s.startswith("downloaded"))
    for path in differs:
        err.print(f"[yellow]stored with a checksum that differs from the manifest's:[/] {path}")
    for path, why in failed:
        err.print(f"[red]not downloaded:[/] {path}: {why}")
    emit(f"{got} downloaded, {sum(1 for _, s in done if s == 'present')} already present, {len(failed)} failed, into {root.path}")
    if failed:
        raise typer.Exit(1)


def _check_download_options(root: Path, base_url: str | None, from_hub: bool, hub_mirror: Path | None) -> None:
    """The data root, the mirror and the hub options, checked before any file is fetched."""
    from urllib.parse import urlparse

    from ...core.errors import EmbenchError
    from ...core.paths import not_there

    if root.exists() and not root.is_dir():
        raise EmbenchError(f"data root {root} {not_there(root, 'folder')} (--data, else EMBENCH_DATA)")
    if hub_mirror is not None and not from_hub:
        raise EmbenchError("--hub-mirror is where --from-hub copies from: give --from-hub too (or leave --hub-mirror out)")
    if base_url is None:
        return
    url = urlparse(base_url)
    if url.scheme not in ("http", "https", "file"):
        raise EmbenchError(f"--base-url {base_url!r}: give a URL (https://..., or file:///path for a local folder)")
    if url.scheme == "file" and not Path(url.path).is_dir():
        raise EmbenchError(f"--base-url {base_url}: the folder {url.path} {not_there(url.path, 'folder')}")


def _hub_task(name: str) -> tuple[str, dict]:
    """The MTEB task ``-t NAME`` names and its dataset (mteb pins the revision there). An unprefixed name is read as
    embench's alias first (STS-B: MTEB:STSBenchmark, not the nearest mteb name, MTEB:STSB, another data set), then as
    mteb's own name (SICK-R, which embench calls SICKRelatedness); an unknown one is the error of mteb's reading."""
    from ...core.errors import UnknownNameError
    from ...evaluation.suites import MTEB_PREFIX
    from ...tasks import TASKS

    if name.upper().startswith(MTEB_PREFIX.upper()):
        tries = [name]
    else:
        own = TASKS.canonical(name) if name in TASKS else None  # a name or alias of embench's
        tries = list(dict.fromkeys([*([MTEB_PREFIX + own] if own and not own.startswith(MTEB_PREFIX) else []),
                                    MTEB_PREFIX + name]))
    errors = []
    for t in tries:
        try:
            canonical = TASKS.canonical(t)
            return canonical, TASKS.get(canonical).mteb_task().metadata.dataset
        except UnknownNameError as e:
            errors.append(e)
    raise errors[-1]


def _from_hub(root, names: list[str], mirror: Path | None) -> None:
    from ...core.errors import EmbenchError
    from ...data.hub import fetch_hub_dataset
    from ...evaluation.suites import MTEB_PREFIX

    if not names:
        raise EmbenchError("--from-hub: name the MTEB tasks with -t (e.g. -t MTEB:Banking77Classification)")
    for name in names:
        try:
            canonical, meta = _hub_task(name)
        except ImportError:
            raise EmbenchError("--from-hub reads each task's dataset and revision from mteb: pip install 'embench[mteb]'") from None
        dest = fetch_hub_dataset(root, canonical[len(MTEB_PREFIX):], meta["path"], meta.get("revision"), mirror)
        emit(f"{canonical}: {meta['path']}@{meta.get('revision')} -> {dest}")
