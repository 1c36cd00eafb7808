"""STS tasks, declared as data, and the one scorer they share.

STS12-16 (SemEval, several subsets each), STS Benchmark and SICK-Relatedness. For every task the
scorer returns, per subset, the number of scored pairs, Pearson and Spearman, and the three
aggregations of ``docs/PROTOCOLS.md`` for both correlations:

* ``all``: one correlation over the concatenated subsets (SimCSE Table B.1; MTEB's STS12-16);
* ``mean``: the plain average of per-subset correlations (SentEval);
* ``wmean``: the average weighted by scored pairs (BERT-flow, BERT-whitening).

Pairs whose gold line is empty are not scored (SentEval's loader drops them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr, spearmanr

from ..data.readers import iter_tsv, parse_float, read_lines
from ..data.root import DataRoot
from ..core.errors import MalformedDataError
from ..protocols import Protocol
from .base import TASKS, Prepared, TaskScore


@dataclass
class PairGroup:
    """One subset of an STS task: aligned sentence pairs and their gold scores."""

    name: str
    left: list[str]
    right: list[str]
    gold: np.ndarray


# -- scoring ---------------------------------------------------------------------------------
def similarity(a: np.ndarray, b: np.ndarray, kind: str = "cosine") -> np.ndarray:
    """Row-wise similarity of two matrices, computed in float64."""
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    dot = np.einsum("ij,ij->i", a, b)
    if kind == "dot":
        return dot
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return dot / np.maximum(norms, 1e-12)


def correlations(system: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """Pearson and Spearman of system scores against gold (NaN when either side is constant)."""
    if len(system) < 2 or np.ptp(system) == 0 or np.ptp(gold) == 0:
        return {"pearson": float("nan"), "spearman": float("nan")}
    return {"pearson": float(pearsonr(system, gold)[0]), "spearman": float(spearmanr(system, gold)[0])}


def aggregate(groups: list[tuple[str, np.ndarray, np.ndarray]]) -> dict:
    """Per-subset correlations and the ``all``, ``mean`` and ``wmean`` aggregations of both."""
    subsets = {}
    for name, system, gold in groups:
        subsets[name] = {"n": int(len(gold)), **correlations(system, gold)}
    n = np.array([s["n"] for s in subsets.values()], dtype=np.float64)
    out: dict = {"subsets": subsets}
    out["all"] = correlations(np.concatenate([g[1] for g in groups]), np.concatenate([g[2] for g in groups]))
    out["mean"] = {c: float(np.mean([s[c] for s in subsets.values()])) for c in ("pearson", "spearman")}
    out["wmean"] = {c: float(np.average([s[c] for s in subsets.values()], weights=n)) for c in ("pearson", "spearman")}
    out["n"] = int(n.sum())
    return out


def score_groups(groups: list[PairGroup], embed, protocol: Protocol) -> TaskScore:
    scored = []
    for g in groups:
        sims = similarity(embed(g.left), embed(g.right), protocol.similarity)
        scored.append((g.name, sims, g.gold))
    result = aggregate(scored)
    main = result[protocol.aggregation][protocol.correlation]
    return TaskScore(main=main, scores=result)


def _prepared(groups: list[PairGroup], files: list[Path], protocol: Protocol, **meta) -> Prepared:
    texts = [t for g in groups for t in (*g.left, *g.right)]
    return Prepared(
        texts=texts,
        files=files,
        score=lambda embed: score_groups(groups, embed, protocol),
        meta={"pairs": sum(len(g.gold) for g in groups), "subsets": [g.name for g in groups], **meta},
    )


def _regressor_prepared(splits: dict[str, PairGroup], files: list[Path], protocol: Protocol, **meta) -> Prepared:
    """SentEval's original protocol: train a regressor on train, select on dev, score test."""
    from .relatedness import features, fit_predict, senteval_order

    def score(embed) -> TaskScore:
        data = {}
        for name, g in splits.items():
            order = senteval_order(g.left, g.right, g.gold)
            a = embed([g.left[i] for i in order])
            b = embed([g.right[i] for i in order])
            data[name] = (features(a, b), g.gold[order])
        dev_pearson, yhat = fit_predict(
            data["train"][0], data["train"][1], data["dev"][0], data["dev"][1], data["test"][0], seed=protocol.seed
        )
        corr = correlations(yhat, data["test"][1])
        n = len(yhat)
        result = {"subsets": {"test": {"n": n, **corr}}, "all": corr, "mean": corr, "wmean": corr, "n": n, "dev_pearson": dev_pearson}
        return TaskScore(main=result[protocol.aggregation][protocol.correlation], scores=result)

    texts = [t for g in splits.values() for t in (*g.left, *g.right)]
    return Prepared(texts=texts, files=files, score=score, meta={"pairs": len(splits["test"].gold), "scoring": "regressor", **meta})


def _senteval_text(s: str) -> str:
    """SentEval splits on whitespace and SimCSE's batcher joins the tokens with one space."""
    return " ".join(s.split())


# -- STS12-16 --------------------------------------------------------------------------------
@dataclass(frozen=True)
class STSYear:
    """A SemEval STS year: its folders in both layouts and its subsets."""

    name: str
    senteval_dir: str
    raw_dir: str
    subsets: tuple[str, ...]
    display: str = ""
    kind: str = "sts"

    def __post_init__(self):
        if not self.display:
            object.__setattr__(self, "display", self.name)

    def _paths(self, root: DataRoot, subset: str, text: str) -> tuple[Path, Path]:
        if text == "raw":
            base = root.raw / "sts" / self.raw_dir
            return base / f"STS.input.{subset}.txt.gz", base / f"STS.gs.{subset}.txt.gz"
        base = root.senteval / "STS" / self.senteval_dir
        return base / f"STS.input.{subset}.txt", base / f"STS.gs.{subset}.txt"

    def data_files(self, root: DataRoot) -> list[Path]:
        return [p for text in ("senteval", "raw") for s in self.subsets for p in self._paths(root, s, text)]

    def read_subset(self, root: DataRoot, subset: str, text: str) -> tuple[PairGroup, list[Path]]:
        inp, gs = (root.find(p, task=self.name) for p in self._paths(root, subset, text))
        lines, golds = read_lines(inp), read_lines(gs)
        if len(lines) != len(golds):
            shorter, n = (inp, len(lines)) if len(lines) < len(golds) else (gs, len(golds))
            raise MalformedDataError(shorter, n + 1, f"{inp.name} has {len(lines)} lines but {gs.name} has {len(golds)}")
        left, right, gold = [], [], []
        for i, (line, g) in enumerate(zip(lines, golds, strict=True), start=1):
            if not g.strip():
                continue
            fields = line.split("\t")
            if len(fields) < 2:
                raise MalformedDataError(inp, i, f"expected two tab-separated sentences, found {len(fields)} field(s)")
            a, b = fields[0], fields[1]
            if text == "senteval":
                a, b = _senteval_text(a), _senteval_text(b)
            left.append(a)
            right.append(b)
            gold.append(parse_float(gs, i, g.strip(), "gold score"))
        return PairGroup(subset, left, right, np.asarray(gold)), [inp, gs]

    def prepare(self, root: DataRoot, protocol: Protocol) -> Prepared:
        groups, files = [], []
        for subset in self.subsets:
            g, f = self.read_subset(root, subset, protocol.text)
            groups.append(g)
            files += f
        return _prepared(groups, files, protocol, text=protocol.text)


STS_YEARS = [
    STSYear("STS12", "STS12-en-test", "STS12", ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews")),
    STSYear("STS13", "STS13-en-test", "STS13", ("FNWN", "headlines", "OnWN")),
    STSYear("STS14", "STS14-en-test", "STS14", ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news")),
    STSYear("STS15", "STS15-en-test", "STS15", ("answers-forums", "answers-students", "belief", "headlines", "images")),
    STSYear("STS16", "STS16-en-test", "STS16", ("answer-answer", "headlines", "plagiarism", "postediting", "question-question")),
]
for _year in STS_YEARS:
    TASKS.add(_year.name, _year)


# -- STS Benchmark ---------------------------------------------------------------------------
@dataclass(frozen=True)
class STSBenchmark:
    """STS-B: genre, file, year, id, score, sentence1, sentence2 (tab-separated, no header)."""

    name: str = "STSBenchmark"
    display: str = "STS-B"
    kind: str = "sts"

    def _path(self, root: DataRoot, split: str, text: str) -> Path:
        if text == "raw":
            return root.raw / "sts" / "STSBenchmark" / f"sts-{split}.csv.gz"
        return root.senteval / "STS" / "STSBenchmark" / f"sts-{split}.csv"

    def data_files(self, root: DataRoot) -> list[Path]:
        return [self._path(root, s, t) for t in ("senteval", "raw") for s in ("train", "dev", "test")]

    def read_split(self, root: DataRoot, split: str, text: str) -> tuple[PairGroup, Path]:
        path = root.find(self._path(root, split, text), task=self.name)
        left, right, gold = [], [], []
        for i, f in iter_tsv(path, min_fields=7):
            a, b = f[5], f[6]
            if text == "senteval":
                a, b = _senteval_text(a), _senteval_text(b)
            left.append(a)
            right.append(b)
            gold.append(parse_float(path, i, f[4].strip(), "score"))
        return PairGroup(split, left, right, np.asarray(gold)), path

    def prepare(self, root: DataRoot, protocol: Protocol) -> Prepared:
        if protocol.scoring == "regressor":
            read = {s: self.read_split(root, s, protocol.text) for s in ("train", "dev", "test")}
            return _regressor_prepared({s: r[0] for s, r in read.items()}, [r[1] for r in read.values()], protocol, text=protocol.text)
        g, path = self.read_split(root, protocol.stsb_split, protocol.text)
        return _prepared([g], [path], protocol, split=protocol.stsb_split, text=protocol.text)


# -- SICK-Relatedness ------------------------------------------------------------------------
SICK_FILES = {"train": "SICK_train.txt", "trial": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}


@dataclass(frozen=True)
class SICKRelatedness:
    """SICK-R: pair_ID, sentence_A, sentence_B, relatedness_score, entailment_judgment (header line).

    ``sick_split=test`` scores SentEval's 4,927 test pairs; ``full`` scores all 9,927 pairs
    (train + trial + test), which is what MTEB's SICK-R reports.
    """

    name: str = "SICKRelatedness"
    display: str = "SICK-R"
    kind: str = "sts"

    def _path(self, root: DataRoot, part: str, text: str) -> Path:
        if text == "raw":
            return root.raw / "sick2014" / f"{SICK_FILES[part]}.gz"
        return root.senteval / "SICK" / SICK_FILES[part]

    def data_files(self, root: DataRoot) -> list[Path]:
        return [self._path(root, p, t) for t in ("senteval", "raw") for p in SICK_FILES]

    def read_part(self, root: DataRoot, part: str, text: str) -> tuple[PairGroup, Path]:
        path = root.find(self._path(root, part, text), task=self.name)
        left, right, gold = [], [], []
        for i, f in iter_tsv(path, min_fields=4, skip_header=True):
            a, b = f[1], f[2]
            if text == "senteval":
                a, b = _senteval_text(a), _senteval_text(b)
            left.append(a)
            right.append(b)
            gold.append(parse_float(path, i, f[3].strip(), "relatedness score"))
        return PairGroup(part, left, right, np.asarray(gold)), path

    def prepare(self, root: DataRoot, protocol: Protocol) -> Prepared:
        if protocol.scoring == "regressor":  # SentEval: train, trial as dev, test
            read = {s: self.read_part(root, p, protocol.text) for s, p in (("train", "train"), ("dev", "trial"), ("test", "test"))}
            return _regressor_prepared({s: r[0] for s, r in read.items()}, [r[1] for r in read.values()], protocol, text=protocol.text)
        parts = ["test"] if protocol.sick_split == "test" else ["train", "trial", "test"]
        read = [self.read_part(root, p, protocol.text) for p in parts]
        g = PairGroup(
            protocol.sick_split,
            [t for r in read for t in r[0].left],
            [t for r in read for t in r[0].right],
            np.concatenate([r[0].gold for r in read]),
        )
        return _prepared([g], [r[1] for r in read], protocol, split=protocol.sick_split, text=protocol.text)


TASKS.add("STSBenchmark", STSBenchmark(), "STS-B", "STSB")
TASKS.add("SICKRelatedness", SICKRelatedness(), "SICK-R", "SICKR")
