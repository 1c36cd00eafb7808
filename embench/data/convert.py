"""Named conversions from an upstream release to the file embench stores (a manifest entry's ``convert``).

Some files of the data root are not upstream's bytes: a member of a zip or tar release, the first lines
of a large file, a CSV or several column files rewritten as JSON lines. The manifest says so with
``"convert": {"name": ..., <parameters>}``; :func:`convert` applies the named step to the downloaded
payload(s), and the manifest's sha256 is checked on the result, so a conversion that does not
reproduce the stored file fails the download instead of writing something else.
"""

from __future__ import annotations

import csv
import fnmatch
import io
import json
import tarfile
import zipfile
from collections.abc import Callable
from typing import Any

from ..core.errors import EmbenchError

Converter = Callable[..., bytes]
CONVERTERS: dict[str, Converter] = {}


def converter(name: str) -> Callable[[Converter], Converter]:
    def register(fn: Converter) -> Converter:
        CONVERTERS[name] = fn
        return fn

    return register


def convert(spec: dict[str, Any], payloads: list[bytes]) -> bytes:
    """Apply the manifest's ``convert`` spec (``{"name": ..., **params}``) to the downloaded payloads."""
    params = dict(spec)
    name = params.pop("name", None)
    if name not in CONVERTERS:
        raise EmbenchError(f"unknown conversion {name!r} in the manifest (known: {', '.join(sorted(CONVERTERS))})")
    try:
        return CONVERTERS[name](payloads, **params)
    except (KeyError, ValueError, TypeError, zipfile.BadZipFile, tarfile.TarError, UnicodeDecodeError) as e:
        raise EmbenchError(f"conversion {name!r} failed: {type(e).__name__}: {e}") from None


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    # ensure_ascii=False: the stored files keep UTF-8 text as is (json still escapes control characters)
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def _archive_names(payload: bytes) -> list[str]:
    if zipfile.is_zipfile(io.BytesIO(payload)):
        with zipfile.ZipFile(io.BytesIO(payload)) as z:
            return z.namelist()
    with tarfile.open(fileobj=io.BytesIO(payload)) as t:
        return [m.name for m in t.getmembers() if m.isfile()]


def _archive_read(payload: bytes, member: str) -> bytes:
    if zipfile.is_zipfile(io.BytesIO(payload)):
        with zipfile.ZipFile(io.BytesIO(payload)) as z:
            return z.read(member)
    with tarfile.open(fileobj=io.BytesIO(payload)) as t:  # any compression tarfile knows
        f = t.extractfile(member)
        if f is None:
            raise KeyError(f"{member} is not a regular file in the archive")
        return f.read()


@converter("archive-member")
def archive_member(payloads: list[bytes], member: str) -> bytes:
    """One member of a zip or tar release, as is (the STS releases, nltk_data packages)."""
    return _archive_read(payloads[0], member)


@converter("head-lines")
def head_lines(payloads: list[bytes], lines: int) -> bytes:
    """The first ``lines`` lines of a large file (a prefix kept as a small training corpus)."""
    return b"".join(io.BytesIO(payloads[0]).readlines()[:lines])


@converter("csv-to-jsonl")
def csv_to_jsonl(payloads: list[bytes], columns: list[str | None], header: bool = False,
                 labels: dict[str, str] | None = None, label_field: str = "label", order: list[str] | None = None) -> bytes:
    """CSV rows to JSON lines: ``columns`` names each column (None drops it); ``labels`` maps label codes to
    names; ``order`` gives the stored field order when it is not the columns'."""
    rows = list(csv.reader(io.StringIO(payloads[0].decode("utf-8"))))
    out = []
    for row in rows[1:] if header else rows:
        if len(row) != len(columns):
            raise ValueError(f"a CSV row has {len(row)} columns, the manifest names {len(columns)}")
        rec = {k: v for k, v in zip(columns, row, strict=True) if k is not None}
        if labels is not None:
            rec[label_field] = labels[rec[label_field]]
        out.append({k: rec[k] for k in order} if order else rec)
    return _jsonl(out)


@converter("jsonl-fields")
def jsonl_fields(payloads: list[bytes], fields: dict[str, str]) -> bytes:
    """Keep and rename JSON-lines fields: ``fields`` maps the stored name to upstream's."""
    out = []
    for line in payloads[0].decode("utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            out.append({k: rec[v] for k, v in fields.items()})
    return _jsonl(out)


@converter("columns-to-jsonl")
def columns_to_jsonl(payloads: list[bytes], fields: list[str], integers: list[str] | None = None) -> bytes:
    """Parallel one-value-per-line files (one payload per field, in order) zipped into JSON lines."""
    columns = [p.decode("utf-8").splitlines() for p in payloads]
    if len({len(c) for c in columns}) != 1:
        raise ValueError(f"the column files have different line counts: {[len(c) for c in columns]}")
    ints = set(integers or [])
    return _jsonl([{f: int(v) if f in ints else v for f, v in zip(fields, values, strict=True)} for values in zip(*columns, strict=True)])


@converter("newsgroups-bydate")
def newsgroups_bydate(payloads: list[bytes], folder: str) -> bytes:
    """20 Newsgroups' bydate tarball to JSON lines: id (file name), label (group), subject, text (body after the
    headers, stripped of surrounding whitespace: no stored text starts or ends with any)."""
    rows = []
    with tarfile.open(fileobj=io.BytesIO(payloads[0])) as t:
        members = sorted((m for m in t.getmembers() if m.isfile() and m.name.startswith(folder + "/")),
                         key=lambda m: (m.name.split("/")[-2], int(m.name.split("/")[-1])))
        for m in members:
            text = t.extractfile(m).read().decode("latin-1")  # the release is Latin-1
            head, _, body = text.partition("\n\n")
            subject = next((h[len("Subject:"):].strip() for h in head.splitlines() if h.startswith("Subject:")), "")
            rows.append({"id": m.name.split("/")[-1], "label": m.name.split("/")[-2], "subject": subject, "text": body.strip()})
    return _jsonl(rows)


@converter("nltk-lines")
def nltk_lines(payloads: list[bytes], members: list[str] | str, strip_tags: bool = False,
               min_tokens: int = 1, max_tokens: int | None = None) -> bytes:
    """Non-empty lines of nltk_data corpus files, one sentence a line; ``strip_tags`` drops Brown's ``/tag`` suffixes.

    ``members`` lists the archive's files in order, or is one glob pattern (matching names, sorted).
    Lines outside ``min_tokens``..``max_tokens`` whitespace tokens are left out (the data root's corpora
    keep 4 to 80: every stored line has that many, and Brown's 57,340 sentences became 55,099 lines).
    """
    if isinstance(members, str):
        members = sorted(n for n in _archive_names(payloads[0]) if fnmatch.fnmatchcase(n, members))
    out = []
    for member in members:
        for line in _archive_read(payloads[0], member).decode("utf-8", errors="replace").splitlines():
            line = line.strip()
            if not line:
                continue
            if strip_tags:
                line = " ".join(tok.rsplit("/", 1)[0] for tok in line.split())
            if not min_tokens <= len(line.split()) <= (max_tokens or len(line.split())):
                continue
            out.append(line + "\n")
    return "".join(out).encode("utf-8")
