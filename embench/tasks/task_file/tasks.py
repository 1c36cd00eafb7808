"""A task file's task, scored by the code the built-in tasks share.

``pairs`` is an STS task (record kind ``sts``): the test split's similarities correlated with its gold
scores by :mod:`embench.tasks.sts.scoring`, per subset and aggregated when the file has a subset column,
or SentEval's regressor (``--scoring regressor``) when it has train and dev splits. ``classification``
and ``pair-classification`` are SentEval transfer tasks (record kind ``transfer``): SentEval's logistic
regression and validation scheme through :func:`embench.tasks.senteval.transfer.score_transfer`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...core.errors import EmbenchError
from ...data.root import DataRoot, file_sha256
from ...evaluation.protocols import EvalProtocol
from ...evaluation.task_data import data_digest
from ..base import Prepared, RowTask
from ..recorded_protocol import keyed, with_defaults
from ..sts.reader import senteval_text
from ..sts.scoring import PairGroup, regressor_prepared, similarity_prepared
from .declaration import Declaration, read_declaration
from .rows import Labelled, Pairs, read_labelled, read_pairs


def stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def senteval_scale(gold: np.ndarray, low: float, high: float) -> np.ndarray:
    """Gold scores on the scale of SentEval's regressor, which predicts a distribution over the classes 1..5.

    Scores already on it (a range within [0, 5] spanning at least 4: STS-B's 0-5, SICK-R's 1-5) are used
    as they are, as SentEval uses those two; any other range is mapped linearly onto [1, 5].
    """
    if low >= 0 and high <= 5 and high - low >= 4:
        return gold
    return 1 + 4 * (gold - low) / (high - low)


class FileTask(RowTask, ABC):
    """What both kinds share: the declaration (the row whose name and display the task takes), its files, and
    reading them once per version of each file."""

    kind: str
    data = property(lambda self: self.decl)  # RowTask's name and display read the declaration

    def __init__(self, decl: Declaration):
        self.decl, self.stamp = decl, stamp(decl.path)
        self._read: dict[str, tuple[tuple[int, int], Any]] = {}

    @classmethod
    def load(cls, path: str | Path) -> FileTask:
        decl = read_declaration(path)
        return (PairsTask if decl.kind == "pairs" else ClassificationTask)(decl)

    @property
    def description(self) -> str:
        own = f": {self.decl.description}" if self.decl.description else ""
        return f"task file ({self.decl.kind}, {self.sizes()}){own} [{self.decl.path}]"

    def files(self) -> list[Path]:
        """The task file and its data files: each one's sha256 goes into every record."""
        return [self.decl.path, *self.decl.files.values()]

    def data_files(self, root: DataRoot) -> list[Path]:
        return self.files()

    def split(self, split: str) -> Any:
        """One split's rows, read again only when its file has changed."""
        path = self.decl.files[split]
        if split not in self._read or self._read[split][0] != stamp(path):
            self._read[split] = (stamp(path), self._read_split(split))
        return self._read[split][1]

    @abstractmethod
    def _read_split(self, split: str) -> Any:
        """One split's rows, as the kind reads them."""

    @abstractmethod
    def sizes(self) -> str:
        """The splits' sizes, for ``embench list tasks``."""

    def current(self) -> Declaration:
        """The declaration, when the task file is still the one read (else the record would name a file it was
        not computed from)."""
        if stamp(self.decl.path) != self.stamp:
            raise EmbenchError(f"task file {self.decl.path} has changed since it was read; give it again "
                               "(--task-file) to use it")  # evaluate(task_files=) says task_files
        return self.decl

    def recorded_protocol(self, protocol: EvalProtocol) -> EvalProtocol:
        """The protocol this task's record names: the axes its kind is scored under (``scored_axes``), the others at
        their defaults as a built-in task's are (each ignored option trained and stored a duplicate record of one
        score), with the digest of this task's files (``task_data``): a task file of this name over other data keys
        records of its own, instead of replacing this one's (evaluation/task_data.py). A record stored before under
        the ignored axes' defaults keeps its key; one stored under another value of them is computed again, once."""
        return keyed(with_defaults(protocol, self.scored_axes(protocol)),
                     task_data=data_digest(file_sha256(p) for p in self.files()))

    @abstractmethod
    def scored_axes(self, protocol: EvalProtocol) -> tuple[str, ...]:
        """The protocol axes this task's score depends on under ``protocol``, as its ``prepare`` reads them."""

    def stored_problem(self, record: Any, root: DataRoot) -> str | None:
        """Why a stored record of this name is not of this task file (another file of the same name), or None.

        Changed contents are caught by every record's checksums (``evaluation.record_checks.data_problem``)."""
        have = set((getattr(record, "provenance", None) or {}).get("data_files") or {})
        want = {root.relative(p) for p in self.files()}
        if have != want:
            return f"it was computed from other files ({', '.join(sorted(have - want)) or 'none named'}) than {self.decl.path}"
        return None

    def meta(self) -> dict[str, Any]:
        return {"task_file": str(self.decl.path), "task_file_kind": self.decl.kind}


class PairsTask(FileTask):
    """Sentence pairs with gold scores, scored as an STS task."""

    kind = "sts"

    def _read_split(self, split: str) -> Pairs:
        return read_pairs(self.decl, split)

    def sizes(self) -> str:
        parts = [f"{s} {len(self.split(s).gold):,}" for s in ("test", "train", "dev") if s in self.decl.files]
        subsets = self.split("test").subsets
        n = len(dict.fromkeys(subsets or ()))
        return f"{parts[0]} pairs{''.join(', ' + p for p in parts[1:])}" + (
            f"; {n} subset{'s' * (n != 1)}" if subsets is not None else "")

    def scored_axes(self, protocol: EvalProtocol) -> tuple[str, ...]:
        """As a built-in STS task's (sts/scored_axes.py) and as ``mteb.own_results`` names them: the ``correlation``,
        the ``text`` (SentEval's tokens re-joined, or as written) and the ``similarity`` (kept under the regressor too,
        which reads pair features, as STS-B's record keeps it: one run's STS records stay one protocol in a table).
        SentEval's regressor (asked, with a train split) adds its ``scoring`` and the ``seed`` it trains with; scored by
        similarity (``--scoring regressor`` without a train split too, as STS12-16), the ``aggregation`` counts only
        over two subsets or more (else all, mean and wmean are one number). Never STS-B's or SICK-R's split, nor a
        classifier's axes."""
        axes = ("correlation", "text", "similarity")
        if protocol.scoring == "regressor" and "train" in self.decl.files:
            return (*axes, "scoring", "seed")
        subsets = set(self.split("test").subsets or ())  # read once: prepare reads the same split again from memory
        return (*axes, "aggregation") if len(subsets) > 1 else axes

    def group(self, split: str, text: Any, scale: bool = False) -> PairGroup:
        p, decl = self.split(split), self.decl
        gold = senteval_scale(p.gold, *decl.score_range) if scale else p.gold  # type: ignore[misc]
        return PairGroup(split, [text(s) for s in p.left], [text(s) for s in p.right], gold)

    def prepare(self, root: DataRoot, protocol: EvalProtocol) -> Prepared:
        decl = self.current()
        text = senteval_text if protocol.text == "senteval" else str  # SentEval's batcher re-joins tokens with a space
        if protocol.scoring == "regressor" and "train" in decl.files:
            if "dev" not in decl.files:
                raise EmbenchError(f"{decl.path}: --scoring regressor trains on the train split and selects on dev; "
                                   "files declares no dev split")
            splits = {s: self.group(s, text, scale=s != "test") for s in ("train", "dev", "test")}
            return regressor_prepared(splits, self.files(), protocol, text=protocol.text, **self.meta())
        meta = self.meta()
        if protocol.scoring == "regressor":  # as STS12-16: without a train split the pairs are scored by similarity
            meta["scoring"] = f"{protocol.similarity} (no train split for a regressor)"
        whole, subsets = self.group("test", text), self.split("test").subsets
        groups = [whole]
        if subsets is not None:  # each subset scored on its own, then aggregated (--aggregation)
            names = list(dict.fromkeys(subsets))
            idx = {n: [i for i, s in enumerate(subsets) if s == n] for n in names}
            groups = [PairGroup(n, [whole.left[i] for i in ix], [whole.right[i] for i in ix], whole.gold[ix])
                      for n, ix in idx.items()]
        return similarity_prepared(groups, self.files(), protocol, split="test", text=protocol.text, **meta)


@dataclass(frozen=True)
class _Classes:
    """What SentEval's scorer asks of a transfer task."""

    name: str
    scheme: str
    nclasses: int


def label_order(found: list[str]) -> list[str]:
    """The labels found, sorted as numbers when they all are (so 2 comes before 10), else as strings."""
    unique = sorted(set(found))
    try:
        return sorted(unique, key=float)
    except ValueError:
        return unique


class ClassificationTask(FileTask):
    """Texts (or text pairs) with labels, scored as a SentEval transfer task."""

    kind = "transfer"

    def _read_split(self, split: str) -> Labelled:
        return read_labelled(self.decl, split)

    def scored_axes(self, protocol: EvalProtocol) -> tuple[str, ...]:
        """SentEval's classifier, its seed, and a pair task's features: the texts are always split on whitespace
        (``--text`` is not read), and no correlation, similarity or split option reaches a classifier."""
        return ("classifier", "seed", *(("pair_features",) if self.decl.kind == "pair-classification" else ()))

    def labels(self) -> list[str]:
        return list(self.decl.labels) if self.decl.labels else label_order(
            [x for s in self.decl.files for x in self.split(s).labels])

    def sizes(self) -> str:
        counts = ", ".join(f"{s} {len(self.split(s).labels):,}" for s in ("all", "train", "dev", "test") if s in self.decl.files)
        scheme = {"nested": "nested k-fold", "kfold": "k-fold on train, then test", "split": "train/dev/test"}[self.decl.scheme]
        return f"{len(self.labels())} classes, {counts} examples, {scheme}"

    def prepare(self, root: DataRoot, protocol: EvalProtocol) -> Prepared:
        from ..senteval import classifier as clf  # torch: only once a task is run
        from ..senteval.reading import Samples
        from ..senteval.transfer import score_transfer

        decl = self.current()
        labels = self.labels()
        data = {}
        for split in decl.files:  # one split alone is SentEval's one pool ("all"), cross-validated
            rows = self.split(split)
            y = np.asarray([labels.index(x) for x in rows.labels], dtype=np.int64)
            b = [t.split() for t in rows.b] if rows.b is not None else None
            data["all" if decl.scheme == "nested" else split] = Samples([t.split() for t in rows.a], b, y).sorted_like_senteval()
        fit_on = "all" if decl.scheme == "nested" else "train"  # the rows a classifier is trained on
        found = sorted({labels[i] for i in data[fit_on].y})
        if len(found) < 2:  # before any encoding: no classifier can be trained on one class
            file = next(iter(decl.files.values())) if fit_on == "all" else decl.files["train"]
            raise EmbenchError(f"{file}: every row has the label {found[0]!r}; classification task {self.name!r} "
                               f"({decl.path}) needs at least two classes to train on")
        config = clf.get_config(protocol.classifier)
        classes = _Classes(self.name, decl.scheme, len(labels))
        return Prepared(
            texts=[t for s in data.values() for t in s.texts()],
            files=self.files(),
            score=lambda embed: score_transfer(classes, data, embed, config, protocol.seed, features=protocol.pair_features),
            meta={"scheme": decl.scheme, "classifier": config.name, "sizes": {k: len(v.y) for k, v in data.items()},
                  "labels": labels, **self.meta()},
        )
