"""Training data: unlabelled sentences, NLI triplets, long documents (what ``embench train --train-data``
reads, and the analyses and generation that read the same sets).

* Sentences (unsupervised SimCSE): ``.txt`` or ``.txt.gz``, one text per line (SimCSE's
  ``wiki1m_for_simcse.txt`` format); the keyword ``corpora`` takes every file of the data root's
  ``corpora/`` folder.
* Triplets (supervised SimCSE): a CSV with the header ``sent0,sent1,hard_neg`` (SimCSE's
  ``nli_for_simcse.csv``), or the keyword ``snli``: the SentEval SNLI files of the data root grouped
  by premise into (premise, entailment, contradiction) triplets.
* Documents (crops): JSONL with a ``text`` field, or a text file with one document per line; the
  keyword ``20newsgroups`` takes the data root's 20 Newsgroups training texts.

Bad input raises an :class:`~embench.core.errors.EmbenchError` naming the file (and line).
"""

from __future__ import annotations

import csv
import io
import logging
from pathlib import Path

from ..core.errors import CorruptFileError, EmbenchError, MalformedDataError, MissingDataError
from .readers import iter_jsonl, read_lines, read_text, read_text_lines
from .root import DataRoot

log = logging.getLogger(__name__)
TRIPLET_HEADER = ("sent0", "sent1", "hard_neg")


def _existing(path: Path) -> Path:
    if not path.is_file():
        raise MissingDataError(path) if not path.exists() else EmbenchError(f"{path}: not a file")
    return path


def read_sentences(path: str | Path) -> list[str]:
    """Non-blank lines of a text file (``.gz`` allowed), stripped (a blank line is no sentence, where SimCSE's
    loader trains on an empty text); of a JSONL file, each object's ``text``. A table
    (``.csv``, ``.tsv``) is refused: its header and separators would be trained on as sentences."""
    p = _existing(Path(path))
    name = p.name[:-3] if p.name.endswith(".gz") else p.name
    if name.endswith((".jsonl", ".json")):
        return [t.strip() for t in read_documents(p)]
    if name.endswith((".csv", ".tsv")):
        raise EmbenchError(f"{p}: a method that trains on sentences reads a text file (one sentence per line) or JSONL "
                           "with a 'text' field, not a table; triplets (sup-simcse, bellm) read sent0,sent1,hard_neg CSV")
    try:
        lines = read_text_lines(p)  # split as SimCSE's loader splits them: never at a U+2028 inside a sentence
    except CorruptFileError:
        raise
    except (OSError, EOFError) as e:  # a permission problem, ...
        raise EmbenchError(f"{p}: cannot read it ({type(e).__name__}: {e})") from None
    texts = [t.strip() for t in lines if t.strip()]
    if not texts:
        raise EmbenchError(f"{p}: the corpus is empty (no non-blank line)")
    return texts


def read_documents(path: str | Path, field: str = "text") -> list[str]:
    """Documents of a JSONL file (``field`` of each object) or a text file (one per line)."""
    p = _existing(Path(path))
    name = p.name[:-3] if p.name.endswith(".gz") else p.name
    if not name.endswith((".jsonl", ".json")):
        return read_sentences(p)
    docs = []
    try:
        for i, obj in iter_jsonl(p):
            if not isinstance(obj.get(field), str):
                raise MalformedDataError(p, i, f"expected an object with a string {field!r} field")
            if obj[field].strip():
                docs.append(obj[field])
    except CorruptFileError:
        raise
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise EmbenchError(f"{p}: cannot read it ({type(e).__name__}: {e})") from None
    if not docs:
        raise EmbenchError(f"{p}: no document with a non-empty {field!r} field")
    return docs


def read_triplets_csv(path: str | Path, allow_empty: bool = False) -> list[tuple[str, str, str]]:
    """(anchor, positive, hard negative) rows of a SimCSE-style CSV (header ``sent0,sent1,hard_neg``).
    ``allow_empty`` keeps rows with an empty sentence (``embench generate curate`` drops those itself)."""
    p = _existing(Path(path))
    try:
        text = read_text(p)  # a byte-order mark dropped (a spreadsheet's export), bad bytes named by their line
    except CorruptFileError:
        raise
    except (OSError, EOFError) as e:
        raise EmbenchError(f"{p}: cannot read it ({type(e).__name__}: {e})") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[tuple[str, str, str]] = []
    header: list[str] | None = None
    start = line = 1  # where the next record starts: a quoted field can run over lines, and reader.line_num is its end
    try:
        for fields in reader:
            line, start = start, reader.line_num + 1
            if header is None:
                header = [h.strip() for h in fields]
                if tuple(header[:3]) != TRIPLET_HEADER:
                    raise MalformedDataError(p, line, f"expected the header sent0,sent1,hard_neg, found {','.join(header)}")
                continue
            if not fields or all(not x.strip() for x in fields):
                continue
            if len(fields) != len(header):
                raise MalformedDataError(p, line, f"expected {len(header)} comma-separated fields, found {len(fields)}"
                                         + _spanned(text, line, reader.line_num))
            if not allow_empty and any(not x.strip() for x in fields[:3]):
                raise MalformedDataError(p, line, "an empty sentence in sent0, sent1 or hard_neg")
            rows.append((fields[0], fields[1], fields[2]))
    except csv.Error as e:
        raise MalformedDataError(p, start, f"bad CSV ({e})") from None
    if header is not None and reader.line_num > line and _unclosed_quote(text):  # swallowed the rest into its last field
        raise MalformedDataError(p, line, UNCLOSED.format(start=line, end=reader.line_num))
    if not rows:
        raise EmbenchError(f"{p}: no triplet (the file has no row after its header)")
    return rows


UNCLOSED = "a quote opened in this record is never closed: the record runs from line {start} to the end, line {end}"


def _spanned(text: str, start: int, end: int) -> str:
    """What a record running from line ``start`` to ``end`` suggests: a quote never closed, or a quoted field
    over several lines."""
    if end <= start:
        return ""
    if _unclosed_quote(text):
        return f" ({UNCLOSED.format(start=start, end=end)})"
    return f" (a quoted field runs the record from line {start} to line {end})"


def _unclosed_quote(text: str) -> bool:
    """Whether a quoted field of ``text`` is never closed: the lenient reader takes it to the end of the file, a
    strict one says so."""
    try:
        for _ in csv.reader(io.StringIO(text, newline=""), strict=True):
            pass
    except csv.Error as e:
        return "unexpected end of data" in str(e)
    return False


def snli_triplets(root: DataRoot, splits: tuple[str, ...] = ("dev", "test")) -> list[tuple[str, str, str]]:
    """(premise, entailment, contradiction) from SentEval's SNLI files, one triplet per premise.

    SimCSE footnote 7: a premise can have several contradictions; one is used as the hard negative.
    """
    folder = root.senteval / "SNLI"
    out: list[tuple[str, str, str]] = []
    for split in splits:
        files = [root.find(folder / f"{n}.{split}", task="SNLI") for n in ("s1", "s2", "labels")]
        s1, s2, labels = (read_lines(f) for f in files)
        if not len(s1) == len(s2) == len(labels):
            raise EmbenchError(f"{folder}: s1/s2/labels.{split} have {len(s1)}/{len(s2)}/{len(labels)} lines")
        by_premise: dict[str, dict[str, str]] = {}
        for a, b, lab in zip(s1, s2, labels, strict=True):
            by_premise.setdefault(a.strip(), {}).setdefault(lab.strip(), b.strip())
        out += [(p, h["entailment"], h["contradiction"]) for p, h in by_premise.items()
                if "entailment" in h and "contradiction" in h]
    return out


# where str.splitlines ends a line besides \n and \r: embench split a training text file there too before 2026-11-29
SPLITLINES_ONLY = "\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def read_differently_before(specs: list[str], root: DataRoot) -> list[Path]:
    """The text files of ``specs`` that an embench from before 2026-11-29 read into other sentences: those holding a
    line end of ``str.splitlines`` that is no newline (U+2028, U+0085, a form feed, ...). Why a run begun then is
    refused ``--resume`` on an unchanged file."""
    found = []
    for spec in specs:
        try:
            files = corpora_files(root) if spec.lower() == "corpora" else [Path(spec)]
            for f in files:
                name = f.name[:-3] if f.name.endswith(".gz") else f.name
                if f.is_file() and not name.endswith((".jsonl", ".json", ".csv", ".tsv")):
                    if any(c in read_text(f) for c in SPLITLINES_ONLY):
                        found.append(f)
        except (OSError, EOFError, EmbenchError):  # a file gone or unreadable since: the refusal says the rest
            continue
    return found


def corpora_files(root: DataRoot) -> list[Path]:
    files = sorted(p for p in root.corpora.glob("*") if p.name.endswith((".txt", ".txt.gz")))
    if not files:
        raise MissingDataError(root.corpora / "*.txt.gz", task="corpora", root=root.path)
    return files


def load(kind: str, specs: list[str], root: DataRoot) -> list:
    """The training examples of ``kind`` (sentences | triplets | documents) from paths or keywords."""
    if not specs:
        raise EmbenchError("--train-data: no training data given (a path, or corpora | snli | 20newsgroups)")
    examples: list = []
    for spec in specs:
        key = spec.lower()
        if kind == "sentences":
            files = corpora_files(root) if key == "corpora" else [Path(spec)]
            for f in files:
                examples += read_sentences(f)
        elif kind == "triplets":
            examples += snli_triplets(root) if key == "snli" else read_triplets_csv(spec)
        elif kind == "documents":
            if key in ("20newsgroups", "twentynewsgroups"):
                path = root.find(root.tasks / "twentynewsgroups" / "train.jsonl.gz", task="TwentyNewsgroups")
                examples += read_documents(path)
            else:
                examples += read_documents(spec)
        else:
            raise EmbenchError(f"unknown data kind {kind!r}")
    return examples
