"""SentEval's transfer tasks, declared as data, and the one scorer they share.

MR, CR, SUBJ, MPQA (nested k-fold), TREC and MRPC (k-fold on train, then test), SST-2, SST-5 and
SICK-E (train/dev/test), read from SentEval's ``data/downstream`` layout and scored with SentEval's
logistic regression (:mod:`embench.classifier`). Everything SentEval does before the classifier is
kept, because it moves the numbers: each file is read with SentEval's encoding (latin-1 for
MR/CR/SUBJ/MPQA/TREC), split on whitespace and re-joined with one space (SimCSE's batcher), and the
samples of each split are sorted as SentEval sorts them (by token count, then label) before the
folds are drawn, since the order decides which sentence falls in which fold.

Pair tasks (MRPC, SICK-E) feed the classifier ``[u, v, |u - v|, u * v]`` by default, as PROTOCOLS.md
defines them; SentEval's released code (``senteval/mrpc.py``, ``sick.py``) computes only
``[|u - v|, u * v]``, which is the protocol option ``pair_features="senteval-code"``.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import classifier as clf
from ..data.readers import read_bytes
from ..data.root import DataRoot
from ..core.errors import MalformedDataError
from ..protocols import Protocol
from ..suites import STS_TASKS, SUITES, Suite
from .base import TASKS, Prepared, TaskScore

Tokens = list[str]
# A line parser: (path, line number, line) -> (first sentence's tokens, second's or None, label)
LineParser = Callable[[Path, int, str], tuple[Tokens, Tokens | None, int]]


@dataclass
class Samples:
    """One split, in SentEval's order: token lists (and second sentences for pairs) and labels."""

    a: list[Tokens]
    b: list[Tokens] | None
    y: np.ndarray

    def sorted_like_senteval(self) -> Samples:
        """SentEval sorts each split by (len(a), label), or (len(a), len(b), label) for pairs."""
        if self.b is None:
            order = sorted(range(len(self.a)), key=lambda i: (len(self.a[i]), self.y[i]))
            return Samples([self.a[i] for i in order], None, self.y[order])
        order = sorted(range(len(self.a)), key=lambda i: (len(self.a[i]), len(self.b[i]), self.y[i]))
        return Samples([self.a[i] for i in order], [self.b[i] for i in order], self.y[order])

    def texts(self) -> list[str]:
        join = [" ".join(t) for t in self.a]
        return join + ([" ".join(t) for t in self.b] if self.b is not None else [])


# -- reading ---------------------------------------------------------------------------------
def _read_text(path: Path, encoding: str) -> str:
    raw = read_bytes(path)
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as e:
        raise MalformedDataError(path, raw[: e.start].count(b"\n") + 1, f"not valid {encoding} ({e.reason})") from None


def _lines(path: Path, encoding: str) -> list[str]:
    """Lines as ``for line in open(path)`` yields them (universal newlines), as SentEval reads."""
    lines = io.StringIO(_read_text(path, encoding), newline=None).read().split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _label(path: Path, i: int, value: str, labels: dict[str, int]) -> int:
    if value not in labels:
        raise MalformedDataError(path, i, f"unknown label {value!r}; expected one of: {', '.join(labels)}")
    return labels[value]


def _columns(path: Path, i: int, line: str, sep: str, n: int, exact: bool) -> list[str]:
    cols = line.strip().split(sep)
    if len(cols) < n or (exact and len(cols) != n):
        sep_name = "tab" if sep == "\t" else repr(sep)
        raise MalformedDataError(path, i, f"expected {n} {sep_name}-separated columns, found {len(cols)}")
    return cols


def parse_trec(labels: dict[str, int]) -> LineParser:
    """``COARSE:fine question tokens``: the coarse label, the question after the fine label."""

    def parse(path: Path, i: int, line: str):
        if ":" not in line:
            raise MalformedDataError(path, i, "expected 'LABEL:fine question', found no ':'")
        target, sample = line.strip().split(":", 1)
        if " " not in sample:
            raise MalformedDataError(path, i, "expected a question after the fine label")
        return sample.split(" ", 1)[1].split(), None, _label(path, i, target, labels)

    return parse


def parse_sst2(labels: dict[str, int]) -> LineParser:
    """``sentence<TAB>label``."""

    def parse(path: Path, i: int, line: str):
        text, label = _columns(path, i, line, "\t", 2, exact=True)
        return text.split(), None, _label(path, i, label.strip(), labels)

    return parse


def parse_sst_fine(labels: dict[str, int]) -> LineParser:
    """``label sentence`` (space-separated label first)."""

    def parse(path: Path, i: int, line: str):
        fields = line.strip().split(" ", 1)
        if len(fields) < 2:
            raise MalformedDataError(path, i, "expected 'label sentence', found one field")
        return fields[1].split(), None, _label(path, i, fields[0], labels)

    return parse


def parse_columns(a: int, b: int, y: int, ncols: int, labels: dict[str, int]) -> LineParser:
    """Tab-separated columns with a header line (MRPC, SICK): two sentences and a label column."""

    def parse(path: Path, i: int, line: str):
        cols = _columns(path, i, line, "\t", ncols, exact=False)
        return cols[a].split(), cols[b].split(), _label(path, i, cols[y], labels)

    return parse


# -- declarations ----------------------------------------------------------------------------
@dataclass(frozen=True)
class TransferTask:
    """A SentEval classification task: where its files are, how a line reads, how it is validated.

    ``splits`` maps a split name (``all`` for the one-pool tasks, else ``train``/``dev``/``test``) to
    its files; one-file-per-class tasks give ``(file, label)`` pairs and no ``parser``.
    """

    name: str
    display: str
    folder: str
    scheme: str  # "nested" (InnerKFoldClassifier), "kfold" (KFoldClassifier), "split" (SplitClassifier)
    nclasses: int
    splits: dict[str, tuple]
    parser: LineParser | None = None
    encoding: str = "utf-8"
    header: bool = False
    kind: str = "transfer"
    aliases: tuple[str, ...] = field(default=())

    def _path(self, root: DataRoot, file: str) -> Path:
        return root.senteval / self.folder / file

    def data_files(self, root: DataRoot) -> list[Path]:
        return [self._path(root, f if isinstance(f, str) else f[0]) for files in self.splits.values() for f in files]

    def read(self, root: DataRoot) -> tuple[dict[str, Samples], list[Path]]:
        out, paths = {}, []
        for split, files in self.splits.items():
            a, b, y = [], [], []
            for f in files:
                if self.parser is None:  # one file per class: every line is a sample
                    file, label = f
                    path = root.find(self._path(root, file), task=self.name)
                    lines = _read_text(path, self.encoding).splitlines()  # binary.py: f.read().splitlines()
                    a += [line.split() for line in lines]
                    y += [label] * len(lines)
                else:
                    path = root.find(self._path(root, f), task=self.name)
                    for i, line in enumerate(_lines(path, self.encoding), start=1):
                        if (self.header and i == 1) or not line.strip():
                            continue
                        ta, tb, label = self.parser(path, i, line)
                        a.append(ta)
                        b.append(tb)
                        y.append(label)
                paths.append(path)
            pair = bool(b) and b[0] is not None
            out[split] = Samples(a, b if pair else None, np.asarray(y, dtype=np.int64)).sorted_like_senteval()
        return out, paths

    def prepare(self, root: DataRoot, protocol: Protocol) -> Prepared:
        data, paths = self.read(root)
        texts = [t for s in data.values() for t in s.texts()]
        config = clf.get_config(protocol.classifier)
        return Prepared(
            texts=texts,
            files=paths,
            score=lambda embed: score_transfer(self, data, embed, config, protocol.seed, features=protocol.pair_features),
            meta={"scheme": self.scheme, "classifier": config.name, "sizes": {k: len(v.y) for k, v in data.items()}},
        )


PAIR_FEATURES = {"uv": "[u, v, |u-v|, u*v]", "senteval-code": "[|u-v|, u*v]"}


def pair_features(u: np.ndarray, v: np.ndarray, features: str = "uv") -> np.ndarray:
    """``uv``: ``[u, v, |u - v|, u * v]`` (PROTOCOLS.md); ``senteval-code``: ``[|u - v|, u * v]`` (SentEval's code)."""
    if features == "senteval-code":
        return np.c_[np.abs(u - v), u * v]
    if features == "uv":
        return np.c_[u, v, np.abs(u - v), u * v]
    raise ValueError(f"unknown pair features {features!r}; choose one of: {', '.join(PAIR_FEATURES)}")


def _features(s: Samples, embed, features: str) -> np.ndarray:
    u = np.asarray(embed([" ".join(t) for t in s.a]), dtype=np.float32)
    if s.b is None:
        return u
    return pair_features(u, np.asarray(embed([" ".join(t) for t in s.b]), dtype=np.float32), features)


def score_transfer(task: TransferTask, data: dict[str, Samples], embed, config: clf.ClassifierConfig, seed: int, device=None,
                   batched: bool = True, features: str = "uv") -> TaskScore:
    """Embed every split, run the task's SentEval validation scheme; main = test accuracy (0-1)."""
    feats = {k: _features(s, embed, features) for k, s in data.items()}
    start = time.perf_counter()
    common = dict(nclasses=task.nclasses, config=config, seed=seed, device=device, batched=batched, what=task.name)
    if task.scheme == "nested":
        res = clf.nested_cv(feats["all"], data["all"].y, **common)
    elif task.scheme == "kfold":
        res = clf.kfold_then_test(feats["train"], data["train"].y, feats["test"], data["test"].y, **common)
        pred = res.pop("predictions")
        if task.nclasses == 2:
            from sklearn.metrics import f1_score

            res["test_f1"] = round(100 * float(f1_score(data["test"].y, pred)), 2) / 100
    else:
        res = clf.train_dev_test(
            feats["train"], data["train"].y, feats["dev"], data["dev"].y, feats["test"], data["test"].y, **common
        )
    fit_seconds = time.perf_counter() - start
    res.update(classifier=config.name, seed=seed, penalty_grid=list(clf.PENALTIES))
    if any(s.b is not None for s in data.values()):
        res["features"] = PAIR_FEATURES[features]
    device_name = str(device or clf.default_device())
    return TaskScore(main=res["test_acc"], scores=res, meta={"fit_seconds": round(fit_seconds, 3), "classifier_device": device_name})


TREC_LABELS = {"ABBR": 0, "DESC": 1, "ENTY": 2, "HUM": 3, "LOC": 4, "NUM": 5}
SICK_LABELS = {"CONTRADICTION": 0, "NEUTRAL": 1, "ENTAILMENT": 2}
SST_SPLITS = {"train": ("sentiment-train",), "dev": ("sentiment-dev",), "test": ("sentiment-test",)}

TRANSFER_TASKS = [
    # binary.py: positive file first (label 1), then negative (label 0); SUBJ: objective = 1.
    TransferTask("MR", "MR", "MR", "nested", 2, {"all": (("rt-polarity.pos", 1), ("rt-polarity.neg", 0))}, encoding="latin-1"),
    TransferTask("CR", "CR", "CR", "nested", 2, {"all": (("custrev.pos", 1), ("custrev.neg", 0))}, encoding="latin-1"),
    TransferTask("SUBJ", "SUBJ", "SUBJ", "nested", 2, {"all": (("subj.objective", 1), ("subj.subjective", 0))}, encoding="latin-1"),
    TransferTask("MPQA", "MPQA", "MPQA", "nested", 2, {"all": (("mpqa.pos", 1), ("mpqa.neg", 0))}, encoding="latin-1"),
    TransferTask("SST2", "SST", "SST/binary", "split", 2, SST_SPLITS, parse_sst2({"0": 0, "1": 1}), aliases=("SST", "SST-2")),
    TransferTask("TREC", "TREC", "TREC", "kfold", 6, {"train": ("train_5500.label",), "test": ("TREC_10.label",)}, parse_trec(TREC_LABELS), encoding="latin-1"),
    TransferTask(
        "MRPC", "MRPC", "MRPC", "kfold", 2,
        {"train": ("msr_paraphrase_train.txt",), "test": ("msr_paraphrase_test.txt",)},
        parse_columns(3, 4, 0, 5, {"0": 0, "1": 1}), header=True,
    ),
    TransferTask("SST5", "SST-5", "SST/fine", "split", 5, SST_SPLITS, parse_sst_fine({str(i): i for i in range(5)}), aliases=("SST-5",)),
    TransferTask(
        "SICKEntailment", "SICK-E", "SICK", "split", 3,
        {"train": ("SICK_train.txt",), "dev": ("SICK_trial.txt",), "test": ("SICK_test_annotated.txt",)},
        parse_columns(1, 2, 4, 5, SICK_LABELS), header=True, aliases=("SICK-E", "SICKE"),
    ),
]
for _task in TRANSFER_TASKS:
    TASKS.add(_task.name, _task, *_task.aliases)

TRANSFER_SEVEN = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")
SUITES.add("transfer", Suite("transfer", TRANSFER_SEVEN, "SentEval transfer: MR CR SUBJ MPQA SST TREC MRPC, logistic regression, test accuracy"))
SUITES.add("senteval", Suite("senteval", STS_TASKS + TRANSFER_SEVEN, "SimCSE's full table: sts-all (7 STS tasks) + the 7 SentEval transfer tasks"))
