"""What an analysis leaves in its output folder besides its numbers and figures: ``NAME.analysis.json``, which says
what produced them and lists them.

It holds the embench version, the analysis and its options as resolved (defaults included), the data root and
embedding cache, and per model its label (the ``model`` column of every table), what was named, the load options
given, and each encoder the run made: its description (resolved source, revision, fingerprint and every setting
that changes its vectors, :meth:`HFEncoder.describe`, as a result record keeps it) and its cache key. A layer or
pooling view is listed by what it changes. One file per analysis, so analyses run into one folder, one after
another or together, each keep their own.

The list of files is how a re-run cleans up after itself: a file the previous run of the same analysis wrote into
the folder and this run did not write again (``attention_maps_1.png`` after a run with one sentence fewer) is
removed once the new run has written everything, so no figure is left beside numbers it contradicts. Only files
listed there are ever removed, never a user's own files nor another analysis' outputs, and a run that fails
removes nothing.
"""

from __future__ import annotations

import json
import time
from pathlib import Path, PurePosixPath
from typing import Any

from ..core import atomic
from ..core.errors import EmbenchError
from ..core.version import __version__
from .inputs import jsonable

SUFFIX = ".analysis.json"


def provenance_path(out: Path | str, name: str) -> Path:
    return Path(out) / f"{name}{SUFFIX}"


def write_provenance(name: str, result: Any, refs: list, ctx: Any, out: Path | str, options: dict[str, Any]) -> Any:
    """Remove what the previous run of analysis ``name`` wrote into ``out`` and this one did not, then write this
    run's provenance beside its outputs (added to ``result.files``)."""
    out = Path(out)
    path = provenance_path(out, name)
    written = [n for n in (_inside(f, out) for f in result.files) if n is not None]
    for stale in sorted(set(previous_files(path)) - set(written)):
        target = out / stale
        if target.is_file() and not target.is_symlink():
            target.unlink()
    with atomic.output_errors(path):  # a full disk: one error naming the file
        atomic.write_json(path, {
            "analysis": name, "embench_version": __version__, "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "options": options, "data": str(ctx.root.path), "cache_dir": None if ctx.cache_dir is None else str(ctx.cache_dir),
            "models": [_model(ref) for ref in refs], "files": written,
        }, default=jsonable)
    result.files.append(path)
    return result


def previous_files(path: Path) -> list[str]:
    """The files a previous run listed, as names inside its folder; a name that could reach outside the folder (or
    the provenance file itself, or a file that is not a JSON list of names) lists nothing: nothing is removed."""
    try:
        names = json.loads(path.read_text(encoding="utf-8")).get("files", [])
    except (OSError, ValueError, AttributeError):
        return []
    if not isinstance(names, list):
        return []
    safe = []
    for n in names:
        p = PurePosixPath(n) if isinstance(n, str) else None
        if p is not None and n and not p.is_absolute() and ".." not in p.parts and "\\" not in n and p.name != path.name:
            safe.append(str(p))
    return safe


def _inside(file: Path | str, out: Path) -> str | None:
    """``file``'s name inside ``out`` (``a/b.png``), or None for a file written elsewhere (never listed, never removed)."""
    try:
        return Path(file).relative_to(out).as_posix()
    except ValueError:
        return None


def _model(ref: Any) -> dict[str, Any]:
    """What one ``--model`` was: its label, what was named, the load options given, and every encoder made of it (the
    first in full, each view by the fields it changes), with its cache key."""
    spec = ref.spec if isinstance(ref.spec, (str, Path)) else f"python object {type(ref.spec).__name__}"
    entry: dict[str, Any] = {"label": ref.label, "model": str(spec), "load_options": dict(ref.options)}
    described = [_described(e) for e in ref.made()]
    if described:  # none for a folder of checkpoints, whose points are loaded one by one
        entry["encoder"] = described[0]
        entry["views"] = [{k: v for k, v in d.items() if k == "cache_key" or described[0].get(k) != v} for d in described[1:]]
    return entry


def _described(encoder: Any) -> dict[str, Any]:
    out = dict(encoder.describe()) if hasattr(encoder, "describe") else {"name": getattr(encoder, "name", type(encoder).__name__)}
    try:
        out["cache_key"] = encoder.cache_key()
    except EmbenchError:  # an object without a fingerprint has no key (its vectors are never cached)
        out["cache_key"] = None
    return out
