"""Labelled text sets of the data root, for kNN accuracy and t-SNE maps.

Each set is declared as data: its files (relative to the data root), which field holds the text
and which the label. By default every split a set has is pooled, because the cropping paper
(Table 2) evaluates kNN on a 9:1 split of a whole dataset; ``splits=`` picks some.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.arguments import name_list
from ..core.errors import EmbenchError, MalformedDataError, MissingDataError
from ..core.plugins import instance_of
from ..core.registry import Registry
from ..data.readers import iter_jsonl, read_bytes
from ..data.root import DataRoot
from .option_values import check_values


@dataclass(frozen=True)
class LabelledSpec:
    """Where a labelled set lives and how to read it."""

    name: str
    folder: str  # relative to the data root's top, e.g. "tasks/banking77"
    splits: dict[str, str]  # split -> file name inside ``folder``
    fmt: str = "jsonl"  # "jsonl" (text/label fields) or "trec" (SentEval's "LABEL:fine text" lines)
    text_fields: tuple[str, ...] = ("text",)
    label_field: str = "label"
    description: str = ""


@dataclass
class LabelledSet:
    """Texts with their labels, and the files they came from."""

    name: str
    texts: list[str]
    labels: list[str]
    files: list[Path] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.texts)


LABELLED: Registry[LabelledSpec] = Registry("labelled set", plugins="embench.datasets", expects=instance_of(
    "embench.analysis.labelled:LabelledSpec", "an embench.analysis.labelled.LabelledSpec"))


def _declare(spec: LabelledSpec, *aliases: str) -> None:
    LABELLED.add(spec.name, spec, *aliases)


_declare(LabelledSpec(name="twentynewsgroups", folder="tasks/twentynewsgroups",
                      splits={"train": "train.jsonl.gz", "test": "test.jsonl.gz"},
                      description="20 Newsgroups bydate, message bodies, 20 labels"), "20newsgroups", "20ng")
_declare(LabelledSpec(name="banking77", folder="tasks/banking77", splits={"train": "train.jsonl.gz", "test": "test.jsonl.gz"},
                      description="Banking77 intents, 77 labels"))
_declare(LabelledSpec(name="emotion", folder="tasks/emotion",
                      splits={"train": "train.jsonl.gz", "validation": "validation.jsonl.gz", "test": "test.jsonl.gz"},
                      description="Emotion (MTEB split), 6 labels"))
_declare(LabelledSpec(name="agnews", folder="tasks/agnews", splits={"test": "test.jsonl.gz"},
                      description="AG News test split (title is not used), 4 labels"), "ag_news")
_declare(LabelledSpec(name="trec", folder="senteval/downstream/TREC", splits={"train": "train_5500.label", "test": "TREC_10.label"},
                      fmt="trec", description="SentEval TREC questions, 6 coarse labels"))


def check_set_names(options: dict[str, Any]) -> None:
    """The labelled sets an analysis' ``dataset``/``datasets`` option names (knn, layers, tsne) are known ones,
    checked before any model loads (a typo surfaced after the model had run); empty or None: no set."""
    for key in ("dataset", "datasets"):
        value = options.get(key)
        for one in (value if isinstance(value, list | tuple) else [value]) if value else []:
            LABELLED.canonical(str(one))  # the nearest names on a typo


def labelled_files(name: str, root: DataRoot | str | Path | None = None, splits: list[str] | None = None) -> list[Path]:
    """The files of a labelled set (their expected paths, present or not)."""
    spec = LABELLED.get(name)
    root = root if isinstance(root, DataRoot) else DataRoot.resolve(root)
    base = _folder(root, spec)
    return [base / spec.splits[s] for s in _splits(spec, splits)]


def load_labelled(
    name: str,
    root: DataRoot | str | Path | None = None,
    *,
    splits: list[str] | None = None,
    limit: int | None = None,
    seed: int = 42,
) -> LabelledSet:
    """Read a labelled set from the data root.

    ``limit`` keeps a random subset of that many examples (seeded), for quick runs. Raises
    :class:`MissingDataError` naming every missing file, and :class:`MalformedDataError` with
    file and line on a bad line.
    """
    spec = LABELLED.get(name)
    check_values(name, {"limit": None}, {"limit": limit, "seed": seed}, where="load_labelled")  # limit=-5: random's error
    root = root if isinstance(root, DataRoot) else DataRoot.resolve(root)
    wanted = labelled_files(spec.name, root, name_list(splits, "splits"))  # "test" is one split, not four letters
    found, missing = [], []
    for p in wanted:
        try:
            found.append(root.find(p, task=spec.name))
        except MissingDataError:
            missing.append(p)
    if missing:
        raise MissingDataError(", ".join(str(p) for p in missing), task=spec.name, root=root.path)
    texts: list[str] = []
    labels: list[str] = []
    for path in found:
        reader = _read_trec if spec.fmt == "trec" else _read_jsonl
        for t, lab in reader(path, spec):
            texts.append(t)
            labels.append(lab)
    if not texts:
        raise EmbenchError(f"labelled set {spec.name!r} is empty ({', '.join(map(str, found))})")
    if limit is not None and limit < len(texts):
        keep = sorted(random.Random(seed).sample(range(len(texts)), limit))
        texts = [texts[i] for i in keep]
        labels = [labels[i] for i in keep]
    return LabelledSet(spec.name, texts, labels, found)


def _folder(root: DataRoot, spec: LabelledSpec) -> Path:
    # SentEval sets follow the data root's SentEval layout (it may be a bare downstream folder).
    if spec.folder.startswith("senteval/downstream/"):
        return root.senteval / spec.folder.removeprefix("senteval/downstream/")
    return root.path / spec.folder


def _splits(spec: LabelledSpec, splits: list[str] | None) -> list[str]:
    if not splits:
        return list(spec.splits)
    bad = [s for s in splits if s not in spec.splits]
    if bad:
        raise EmbenchError(f"labelled set {spec.name!r} has no split(s) {bad}; it has {list(spec.splits)}")
    return list(splits)


def _read_jsonl(path: Path, spec: LabelledSpec):
    for i, row in iter_jsonl(path):
        missing = [k for k in (*spec.text_fields, spec.label_field) if k not in row]
        if missing:
            raise MalformedDataError(path, i, f"missing field(s) {missing}")
        text = " ".join(str(row[k]) for k in spec.text_fields).strip()
        yield text, str(row[spec.label_field])


def _read_trec(path: Path, spec: LabelledSpec):
    # SentEval reads TREC as latin-1 (train_5500.label is not valid UTF-8); coarse label = before ':'.
    raw = read_bytes(path)
    for i, line in enumerate(raw.decode("latin-1").splitlines(), start=1):
        if not line.strip():
            continue
        head, _, text = line.partition(" ")
        if ":" not in head or not text.strip():
            raise MalformedDataError(path, i, "expected 'LABEL:fine question text'")
        yield text.strip(), head.split(":", 1)[0]
