"""The download manifest (URL + sha256 per file): downloads, and the checks behind ``embench data check``.

Checksums are of each file's content as it is read (the decompressed bytes for ``.gz`` files), so
a file compressed or decompressed by a user still verifies.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.atomic import write_bytes
from ..core.errors import ChecksumError, CorruptFileError, EmbenchError
from ..core.paths import not_there, within
from .root import DataRoot, layout_paths, located


@dataclass(frozen=True)
class Entry:
    path: str  # relative to the data root, embench layout
    url: str | list[str]  # several URLs: a conversion that joins several upstream files
    sha256: str  # of the content as stored (decompressed for .gz), after any conversion
    task: str | None = None
    compress: bool = False  # upstream is plain and the root stores it gzipped (every .gz path is stored gzipped)
    convert: dict[str, Any] | None = None  # a named step of embench.data.convert: {"name": ..., **params}
    verified: str = ""  # how the entry was checked against upstream's content (see the manifest's note)

    @property
    def urls(self) -> list[str]:
        return [self.url] if isinstance(self.url, str) else list(self.url)


def load_manifest(path: str | Path | None = None) -> list[Entry]:
    """The packaged manifest, or one from ``path`` (same JSON shape)."""
    try:
        if path is None:
            text = resources.files("embench.data").joinpath("manifest.json").read_text()
            source = "embench/data/manifest.json"
        else:
            text = Path(path).read_text()
            source = str(path)
        raw = json.loads(text)
        return [Entry(**{k: e[k] for k in Entry.__dataclass_fields__ if k in e}) for e in raw["files"]]
    except (FileNotFoundError, IsADirectoryError):
        raise EmbenchError(f"manifest {path} {not_there(path)}") from None
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as e:
        raise EmbenchError(f"manifest {source} is not valid: {e}") from None


def content_sha256(path: Path) -> str:
    """sha256 of the (decompressed) content; a damaged gzip is a CorruptFileError naming the file."""
    return content_stats(path)[0]


def content_stats(path: Path) -> tuple[str, int]:
    """(sha256, line count) of the (decompressed) content, read once per file version in a process."""
    st = path.stat()
    return _content_stats(str(path.resolve()), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=4096)
def _content_stats(path: str, size: int, mtime_ns: int) -> tuple[str, int]:
    # keyed on size and mtime: `data check` reads a file for its task row and again for the per-file count
    h, lines, last = hashlib.sha256(), 0, b"\n"
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
                lines += chunk.count(b"\n")
                last = chunk[-1:]
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise CorruptFileError(Path(path), f"cannot decompress it ({type(e).__name__}: {e})") from None
    return h.hexdigest(), lines + (last != b"\n")  # a last line without its newline counts too


def _matches(task: str | None, wanted: set[str]) -> bool:
    return not wanted or (task or "").lower() in wanted


def _present(dest: Path, sha256: str) -> bool:
    """The file (or its .gz / plain twin) is there with the right content; a damaged gzip is not."""
    twin = dest.with_suffix("") if dest.suffix == ".gz" else dest.with_name(dest.name + ".gz")
    for p in (dest, twin):
        try:
            if p.is_file() and content_sha256(p) == sha256:
                return True
        except CorruptFileError:
            continue
    return False


INFLATE_RATIO = 100  # text compresses 3-10x: a download that inflates 100x more than it weighs is a bomb
INFLATE_FLOOR = 256 << 20  # below this any inflation is fine (the cap only matters for large outputs)


def _decompressed(payload: bytes, url: str) -> bytes:
    """A gzip download inflated member by member, refused once it passes ``INFLATE_RATIO`` times its own size
    (and ``INFLATE_FLOOR``): a hostile mirror's gzip bomb is stopped before it fills the memory."""
    if payload[:2] != b"\x1f\x8b":
        return payload
    limit = max(INFLATE_FLOOR, INFLATE_RATIO * len(payload))
    out, data = bytearray(), payload
    try:
        while data:
            d = zlib.decompressobj(wbits=31)
            while True:
                out += d.decompress(data, limit + 1 - len(out))
                if len(out) > limit:
                    raise CorruptFileError(Path(url), f"the download inflates to more than {limit:,} bytes from "
                                                      f"{len(payload):,} (a gzip bomb?); refused, nothing written")
                data = d.unconsumed_tail
                if d.eof or not data:
                    break
            if not d.eof:
                raise EOFError("compressed file ended before the end-of-stream marker was reached")
            data = d.unused_data.lstrip(b"\0")  # the next gzip member, if any (gzip.decompress reads them all)
    except (EOFError, zlib.error) as e:
        raise CorruptFileError(Path(url), f"cannot decompress the download ({type(e).__name__}: {e})") from None
    return bytes(out)


def _fetch(url: str, path: str, timeout: float) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.read()
    except (urllib.error.URLError, OSError, ValueError) as err:
        raise EmbenchError(f"could not download {url} for {path}: {err}") from None


def download(
    root: DataRoot,
    tasks: list[str] | None = None,
    manifest: str | Path | None = None,
    base_url: str | None = None,
    timeout: float = 60.0,
    paths: set[str] | None = None,
    keep_going: bool = False,
    accept_mismatch: bool = False,
) -> list[tuple[str, str]]:
    """Fetch the manifest's files into ``root``; returns (path, status) per file.

    ``tasks`` are the manifest's task names (case-insensitive) and ``paths`` its file paths; the
    caller (``embench data download -t``) resolves task, alias and dataset names to paths.

    A present file whose checksum matches is kept ("present"); others are downloaded, converted
    where the entry says so, verified and renamed into place ("downloaded"), one by one, so an
    interrupted run resumes where it stopped. A checksum mismatch raises and writes nothing for
    that file; with ``keep_going`` a file that cannot be fetched or does not verify is reported as
    "failed: <why>" and the others are still fetched. ``accept_mismatch`` stores a converted file whose
    checksum differs ("downloaded, checksum differs"): for manifest entries never compared with
    upstream (their ``verified`` field says so) the manifest may be what is wrong. ``base_url`` replaces
    every entry's URL by ``base_url/<path>`` (a mirror of the data root's own files, with ``.gz``
    removed where the entry compresses; ``file://`` works).
    """
    entries = load_manifest(manifest)
    wanted = {t.lower() for t in tasks or []}
    known = {(e.task or "").lower() for e in entries}
    missing = sorted(t for t in wanted if t not in known)
    if missing:
        raise EmbenchError(f"no files in the manifest for task(s): {', '.join(missing)}")
    done: list[tuple[str, str]] = []
    for e in entries:
        if not _matches(e.task, wanted) or (paths is not None and e.path not in paths):
            continue
        within(root.path, e.path, "manifest entry")  # a crafted manifest must not write outside the root
        # where the root's own layout keeps it (a SentEval root's downstream/, where `data check` reads it): checked
        # again, as a '..' that stays inside embench's layout may not inside a shallower one
        dest = within(root.path, located(root, e.path).relative_to(root.path), "manifest entry")
        if _present(dest, e.sha256):
            done.append((e.path, "present"))
            continue
        try:
            done.append((e.path, _fetch_entry(e, dest, base_url, timeout, accept_mismatch)))
        except EmbenchError as err:
            if not keep_going:
                raise
            # the manifest's own note on how it was checked is for its maintainers; a user gets what to do, and only
            # where the checksum did not match (a failed fetch or write is no reason to doubt the manifest)
            doubted = isinstance(err, ChecksumError) and e.verified.startswith("no")
            unconfirmed = (" (this entry's checksum was never confirmed against the upstream release: if the file is "
                           "right, --accept-mismatch stores it)") if doubted else ""
            done.append((e.path, f"failed: {err}{unconfirmed}"))
    return done


def _fetch_entry(e: Entry, dest: Path, base_url: str | None, timeout: float, accept_mismatch: bool) -> str:
    """Fetch, convert, verify and store one entry; its status."""
    from .convert import convert

    if dest.is_dir():  # neither a read-only nor a full root: writing would fail after the whole fetch, said as either
        raise EmbenchError(f"{dest} is a folder, where the file {e.path} should be: move the folder away, then run "
                           "`embench data download` again")
    if base_url:  # a mirror holds the stored files themselves (a data root of any layout will do): no conversion
        # where the file lies in each layout, and uncompressed where the manifest's is .gz: the first that reads
        urls = [f"{base_url.rstrip('/')}/{q}" for p in layout_paths(e.path) for q in dict.fromkeys((p, p.removesuffix(".gz")))]
        payload, errors = None, []
        for url in urls:
            try:
                payload = _fetch(url, e.path, timeout)
                break
            except EmbenchError as err:
                errors.append(err)
        if payload is None:
            raise errors[0]  # the manifest layout's URL: the others are fallbacks
    else:
        url = " + ".join(e.urls)
        payloads = [_fetch(u, e.path, timeout) for u in e.urls]
        payload = convert(e.convert, payloads) if e.convert else payloads[0]
    payload = _decompressed(payload, url)  # checksums are of the content
    got = hashlib.sha256(payload).hexdigest()
    status = "downloaded"
    if got != e.sha256:
        step = f" after conversion {e.convert['name']!r}" if e.convert and not base_url else ""
        if not accept_mismatch:
            raise ChecksumError(f"{url}: sha256 {got}{step} does not match the manifest's {e.sha256} for {e.path}; nothing was written")
        status = "downloaded, checksum differs"
    try:
        write_bytes(dest, gzip.compress(payload, mtime=0) if e.path.endswith(".gz") else payload)  # .gz paths are stored gzipped
    except OSError as err:  # a read-only or full data root: this file is not kept, the files before it are
        raise EmbenchError(f"cannot write {dest} ({err.strerror or err}); nothing of it was kept: make the data root "
                           "writable or free space, then run `embench data download` again") from None
    return status


def manifest_sums(manifest: str | Path | None = None) -> dict[str, str]:
    """Path (relative to the data root) -> sha256, for every file of the manifest."""
    return {e.path: e.sha256 for e in load_manifest(manifest)}


def check_files(root: DataRoot, files: list[Path], sums: dict[str, str], task: str | None = None) -> dict[str, Any]:
    """Which of ``files`` the data root has, their lines, and their checksums against ``sums``."""
    present, lines, ok, bad, unknown, absent = 0, 0, 0, [], 0, []
    for f in files:
        try:
            real = root.find(f, task=task)
        except FileNotFoundError:
            absent.append(root.relative(f))
            continue
        present += 1
        rel = root.relative(real)
        try:
            digest, n = content_stats(real)
            lines += n
        except CorruptFileError:
            bad.append(f"{rel} (corrupt)")
            continue
        # looked up by the manifest's path (a SentEval root's downstream/... is its senteval/downstream/...), or its twin's
        ref = next((sums[k] for m in root.manifest_paths(real) for k in (m, m + ".gz", m.removesuffix(".gz")) if k in sums),
                   None)
        if ref is None:
            unknown += 1
        elif digest == ref:
            ok += 1
        else:
            bad.append(rel)
    return {
        "files": f"{present}/{len(files)}",
        "rows": lines,
        "checksums": f"{ok} ok" + (f", {len(bad)} differ" if bad else "") + (f", {unknown} unlisted" if unknown else ""),
        "missing": absent,
        "differ": bad,
    }


# Files of a data root that are its own documentation, not data (the shared root has both).
NOT_DATA = ("README.md", "README", "SHA256SUMS")


def check_manifest_files(root: DataRoot, manifest: str | Path | None = None) -> list[dict[str, str]]:
    """One row per file: every manifest entry (ok | differs | corrupt | missing) and every other file (unlisted)."""
    rows, seen = [], set()
    for e in load_manifest(manifest):
        try:
            real = root.find(located(root, e.path))
        except FileNotFoundError:
            rows.append({"path": e.path, "task": e.task or "", "status": "missing"})
            continue
        seen.add(real.resolve())
        try:
            status = "ok" if content_sha256(real) == e.sha256 else "differs"
        except CorruptFileError:
            status = "corrupt"
        rows.append({"path": root.relative(real), "task": e.task or "", "status": status})
    if root.path.is_dir():
        for p in sorted(root.path.rglob("*")):
            if p.is_file() and p.resolve() not in seen and p.name not in NOT_DATA and not p.name.startswith("."):
                rows.append({"path": root.relative(p), "task": "", "status": "unlisted"})
    return rows
