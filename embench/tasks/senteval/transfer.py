"""SentEval's transfer tasks as tasks, and the one scorer they share.

MR, CR, SUBJ, MPQA (nested k-fold), TREC and MRPC (k-fold on train, then test), SST-2, SST-5 and
SICK-E (train/dev/test), declared as rows (:mod:`embench.tasks.senteval.datasets`), read from
SentEval's ``data/downstream`` layout as SentEval reads them (:mod:`embench.tasks.senteval.reading`;
tokens re-joined with one space, as SimCSE's batcher does) and scored with SentEval's logistic
regression (:mod:`embench.tasks.senteval.classifier`, :mod:`embench.tasks.senteval.validation`).

Pair tasks (MRPC, SICK-E) feed the classifier ``[|u - v|, u * v]`` by default, as SentEval's released
code (``senteval/mrpc.py``, ``sick.py``) does and hence every paper's transfer table; PROTOCOLS.md's
``[u, v, |u - v|, u * v]`` is the protocol option ``pair_features="uv"``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...data.root import DataRoot
from ...evaluation.items import Items, items_digest
from ...evaluation.protocols import EvalProtocol
from ..base import Embed, Prepared, RowTask, TaskScore
from ..recorded_protocol import with_defaults
from . import classifier as clf
from . import validation
from .datasets import TRANSFER_DATASETS, TransferData
from .reading import Samples, read_task, task_path


@dataclass(frozen=True)
class TransferTask(RowTask):
    """A transfer task row as a task: reads its files, scores them with SentEval's validation scheme."""

    data: TransferData
    kind: str = "transfer"

    @property
    def scheme(self) -> str:
        return self.data.scheme

    @property
    def nclasses(self) -> int:
        return self.data.nclasses

    def data_files(self, root: DataRoot) -> list[Path]:
        return [task_path(root, self.data, f if isinstance(f, str) else f[0]) for files in self.data.splits.values() for f in files]

    def read(self, root: DataRoot) -> tuple[dict[str, Samples], list[Path]]:
        return read_task(root, self.data)

    def recorded_protocol(self, protocol: EvalProtocol) -> EvalProtocol:
        """The protocol this task's record names: the classifier, its seed and a pair task's features; the STS axes at
        their defaults (``--correlation pearson`` re-keyed, and re-trained, every transfer task)."""
        return with_defaults(protocol, ("classifier", "seed", *(("pair_features",) if self.data.line == "pair-columns" else ())))

    def prepare(self, root: DataRoot, protocol: EvalProtocol) -> Prepared:
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


def pair_features(u: np.ndarray, v: np.ndarray, features: str = "senteval-code") -> np.ndarray:
    """``uv``: ``[u, v, |u - v|, u * v]`` (PROTOCOLS.md); ``senteval-code``: ``[|u - v|, u * v]`` (SentEval's code)."""
    if features == "senteval-code":
        return np.c_[np.abs(u - v), u * v]
    if features == "uv":
        return np.c_[u, v, np.abs(u - v), u * v]
    raise ValueError(f"unknown pair features {features!r}; choose one of: {', '.join(PAIR_FEATURES)}")


def _features(s: Samples, embed: Embed, features: str) -> np.ndarray:
    u = np.asarray(embed([" ".join(t) for t in s.a]), dtype=np.float32)
    if s.b is None:
        return u
    return pair_features(u, np.asarray(embed([" ".join(t) for t in s.b]), dtype=np.float32), features)


def score_transfer(task: TransferTask, data: dict[str, Samples], embed: Embed, config: clf.ClassifierConfig, seed: int, device=None,
                   batched: bool = True, features: str = "senteval-code") -> TaskScore:
    """Embed every split, run the task's SentEval validation scheme; main = test accuracy (0-1)."""
    feats = {k: _features(s, embed, features) for k, s in data.items()}
    start = time.perf_counter()
    common = dict(nclasses=task.nclasses, config=config, seed=seed, device=device, batched=batched, what=task.name)
    if task.scheme == "nested":
        res = validation.nested_cv(feats["all"], data["all"].y, **common)
    elif task.scheme == "kfold":
        res = validation.kfold_then_test(feats["train"], data["train"].y, feats["test"], data["test"].y, **common)
        pred = res["predictions"]
        if task.nclasses == 2:
            from sklearn.metrics import f1_score

            res["test_f1"] = round(100 * float(f1_score(data["test"].y, pred)), 2) / 100
    else:
        res = validation.train_dev_test(
            feats["train"], data["train"].y, feats["dev"], data["dev"].y, feats["test"], data["test"].y, **common
        )
    fit_seconds = time.perf_counter() - start
    tested = data["all" if task.scheme == "nested" else "test"]
    items = accuracy_items(tested, res.pop("predictions"), "all (out of fold)" if task.scheme == "nested" else "test")
    res.update(classifier=config.name, seed=seed, penalty_grid=list(clf.PENALTIES))
    if any(s.b is not None for s in data.values()):
        res["features"] = PAIR_FEATURES[features]
    device_name = str(device or clf.default_device())
    return TaskScore(main=res["test_acc"], scores=res, meta={"fit_seconds": round(fit_seconds, 3), "classifier_device": device_name},
                     items=items)


def accuracy_items(tested: Samples, predictions: np.ndarray, group: str) -> Items:
    """Whether each tested example was classified correctly, identified by its text(s) and label.

    The bootstrap interval is of the pooled accuracy; for nested k-fold tasks the main score is the
    mean of the fold accuracies (SentEval), which differs from the pooled one only by unequal fold sizes.
    """
    y = np.asarray(tested.y)
    texts = (" ".join(t) for side in (tested.a, tested.b or []) for t in side)
    correct = (np.asarray(predictions) == y).astype(np.float64)
    return Items("accuracy", [group], [correct], None, items_digest(texts, [y]))


TRANSFER_TASKS = {d.name: TransferTask(d) for d in TRANSFER_DATASETS}
