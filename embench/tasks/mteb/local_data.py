"""The local data of the data root, in the shape each mteb task expects instead of the hub's copy.

mteb's tasks read their data with ``datasets.load_dataset`` from the Hugging Face hub in
``load_data``, then reshape it in ``dataset_transform``; the evaluators read ``task.dataset``. Here
each supported task gets a builder that reads the files of ``EMBENCH_DATA`` and returns
``task.dataset`` already in its final (post-``dataset_transform``) shape:

* STS (``AbsTaskSTS``): ``DatasetDict(test=Dataset(sentence1, sentence2, score))``;
* classification (``AbsTaskClassification``): ``DatasetDict(train=..., test=...)`` with ``text``, ``label``;
* legacy clustering (``AbsTaskClusteringLegacy``): ``DatasetDict(test=Dataset(sentences=[[...]], labels=[[...]]))``,
  one row per clustering set;
* pair classification (``AbsTaskPairClassification``): ``DatasetDict(test=Dataset(sentence1, sentence2, labels))``;
* retrieval (``AbsTaskRetrieval``): ``{"default": {"test": RetrievalSplitData(corpus, queries, relevant_docs)}}``.

Each builder also reports how its data compares with MTEB's copy: the sample counts are checked
against the descriptive statistics mteb ships for the task, and known differences (a split, a
sample, a field) are declared as notes. Both end up in the result record.

A task without a builder can still run from a local copy of its hub dataset: a folder
``<data root>/mteb/<TaskName>/`` laid out as the hub repository (``load_dataset`` reads it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.errors import EmbenchError, MalformedDataError
from ...data.readers import iter_jsonl, open_text
from ...data.root import DataRoot
from ..sts.datasets import STS_BY_NAME, STS_DATASETS
from ..sts.reader import STS_TASKS


class SchemaError(EmbenchError, ValueError):
    """Local data that does not have a field the mteb task needs: names the task, the field and the file."""


@dataclass
class Built:
    """A task's local data in mteb's shape, with what was read and how it compares with MTEB's copy."""

    dataset: Any
    files: list[Path]
    counts: dict[str, int]  # the statistic names of mteb's descriptive stats -> local values (eval split)
    texts: list[str]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class LocalSpec:
    """How one mteb task is read from the data root."""

    task: str
    kind: str  # sts | classification | clustering | pair | retrieval
    files: tuple[str, ...]  # paths relative to the data root (a .gz twin is accepted)
    build: Callable[[DataRoot, int | None], Built]
    notes: tuple[str, ...] = ()  # known differences from MTEB's copy, beyond the counts


# -- readers -----------------------------------------------------------------------------------
def read_jsonl(path: Path, task: str, required: tuple[str, ...], limit: int | None = None) -> list[dict]:
    """Rows of a JSON-lines file; a row without a field mteb needs is a SchemaError naming it."""
    rows = []
    for i, row in iter_jsonl(path):
        missing = [k for k in required if k not in row]
        if missing:
            raise SchemaError(
                f"{path}:{i}: field {missing[0]!r} is missing; mteb's {task} needs the fields "
                f"{', '.join(required)} (found: {', '.join(sorted(row)) or 'none'})"
            )
        rows.append(row)
        if limit is not None and len(rows) >= limit:
            break
    return rows


def read_qrels(path: Path, task: str) -> dict[str, dict[str, int]]:
    """BEIR qrels: ``query-id corpus-id score`` (tab-separated, header line)."""
    qrels: dict[str, dict[str, int]] = {}
    with open_text(path) as f:
        for i, line in enumerate(f, start=1):
            fields = line.rstrip("\r\n").split("\t")
            if i == 1:
                want = ["query-id", "corpus-id", "score"]
                if fields[:3] != want:
                    raise SchemaError(f"{path}:1: header {fields!r}; mteb's {task} needs the columns {', '.join(want)}")
                continue
            if not line.strip():
                continue
            if len(fields) < 3:
                raise MalformedDataError(path, i, f"expected 3 tab-separated fields (query-id, corpus-id, score), found {len(fields)}")
            try:
                score = int(float(fields[2]))
            except ValueError:
                raise MalformedDataError(path, i, f"score {fields[2]!r} is not a number") from None
            qrels.setdefault(fields[0], {})[fields[1]] = score
    return qrels


def spread(rows: list, limit: int | None) -> list:
    """``limit`` items evenly spaced over ``rows`` (files are often sorted by label: a head slice has one class)."""
    if limit is None or limit >= len(rows):
        return rows
    return [rows[i * len(rows) // limit] for i in range(limit)]


def _find(root: DataRoot, rel: str, task: str) -> Path:
    return root.find(root.path / rel, task=f"MTEB:{task}")


def _dataset_dict(splits: dict[str, dict[str, list]]):
    from datasets import Dataset, DatasetDict

    return DatasetDict({name: Dataset.from_dict(cols) for name, cols in splits.items()})



# -- STS: embench's own STS rows and reader, in the original releases' text (what MTEB feeds) -----
def _sts(dataset: str, parts: tuple[str, ...] | None) -> Callable[[DataRoot, int | None], Built]:
    """The given parts (all when None) of an embench STS dataset, concatenated as MTEB's test split."""

    def build(root: DataRoot, limit: int | None) -> Built:
        task = STS_TASKS[dataset]
        left, right, gold, files = [], [], [], []
        for part in parts or task.data.parts:
            g, f = task.read(root, part, "raw")
            left += g.left
            right += g.right
            gold += [float(x) for x in g.gold]
            files += f
        return _sts_built(left, right, gold, files, limit)

    return build


def _sts_built(left: list[str], right: list[str], gold: list[float], files: list[Path], limit: int | None) -> Built:
    left, right, gold = spread(left, limit), spread(right, limit), spread(gold, limit)
    ds = _dataset_dict({"test": {"sentence1": left, "sentence2": right, "score": gold}})
    return Built(ds, files, _pair_counts(left, right), left + right)


def _pair_counts(left: list[str], right: list[str]) -> dict[str, int]:
    """The pair statistics mteb ships for STS and pair-classification tasks (same names)."""
    return {
        "num_samples": len(left),
        "number_of_characters": sum(len(a) + len(b) for a, b in zip(left, right, strict=True)),
        "unique_pairs": len(set(zip(left, right, strict=True))),
    }


# -- classification ------------------------------------------------------------------------------
def _classification(task: str, folder: str, eval_split: str = "test") -> Callable[[DataRoot, int | None], Built]:
    def build(root: DataRoot, limit: int | None) -> Built:
        train_path = _find(root, f"tasks/{folder}/train.jsonl.gz", task)
        test_path = _find(root, f"tasks/{folder}/{eval_split}.jsonl.gz", task)
        train = spread(read_jsonl(train_path, task, ("text", "label")), None if limit is None else 4 * limit)
        test = spread(read_jsonl(test_path, task, ("text", "label")), limit)
        # One label set for both splits, sorted by name: mteb's hub copies hold integer ids; which id a
        # class gets does not change logistic regression's accuracy.
        names = sorted({str(r["label"]) for r in train + test})
        ids = {n: i for i, n in enumerate(names)}
        ds = _dataset_dict(
            {
                "train": {"text": [r["text"] for r in train], "label": [ids[str(r["label"])] for r in train]},
                eval_split: {"text": [r["text"] for r in test], "label": [ids[str(r["label"])] for r in test]},
            }
        )
        return Built(ds, [train_path, test_path], {"num_samples": len(test), "train_num_samples": len(train)},
                     [r["text"] for r in test + train])

    return build


# -- clustering ----------------------------------------------------------------------------------
def _twentynewsgroups(root: DataRoot, limit: int | None) -> Built:
    """The subject lines of the 20 Newsgroups test split (bydate), as one clustering set."""
    task = "TwentyNewsgroupsClustering"
    path = _find(root, "tasks/twentynewsgroups/test.jsonl.gz", task)
    rows = spread(read_jsonl(path, task, ("subject", "label")), limit)
    names = sorted({r["label"] for r in rows})
    ids = {n: i for i, n in enumerate(names)}
    subjects = [r["subject"] for r in rows]
    ds = _dataset_dict({"test": {"sentences": [subjects], "labels": [[ids[r["label"]] for r in rows]]}})
    return Built(ds, [path], {"num_samples": len(rows)}, subjects)


# -- pair classification -------------------------------------------------------------------------
def _twitterurl(root: DataRoot, limit: int | None) -> Built:
    """MTEB's TwitterURLCorpus "test" is the whole corpus; castorini's copy here is split train + test."""
    task = "TwitterURLCorpus"
    rows, files = [], []
    for split in ("train", "test"):
        path = _find(root, f"tasks/twitterurl/{split}.jsonl.gz", task)
        rows += read_jsonl(path, task, ("sentence1", "sentence2", "label"))
        files.append(path)
    rows = spread(rows, limit)
    bad = next((i for i, r in enumerate(rows) if r["label"] not in (0, 1)), None)
    if bad is not None:
        raise SchemaError(f"{files[0].parent}: field 'label' must be 0 or 1 for mteb's {task}, found {rows[bad]['label']!r}")
    s1, s2 = [r["sentence1"] for r in rows], [r["sentence2"] for r in rows]
    ds = _dataset_dict({"test": {"sentence1": s1, "sentence2": s2, "labels": [int(r["label"]) for r in rows]}})
    return Built(ds, files, _pair_counts(s1, s2), s1 + s2)


# -- retrieval -----------------------------------------------------------------------------------
def _scifact(root: DataRoot, limit: int | None) -> Built:
    """BEIR SciFact: the corpus, the test queries that have qrels, the test qrels."""
    from datasets import Dataset
    from mteb.abstasks.retrieval_dataset_loaders import RetrievalSplitData

    task = "SciFact"
    corpus_path = _find(root, "tasks/scifact/corpus.jsonl.gz", task)
    queries_path = _find(root, "tasks/scifact/queries.jsonl.gz", task)
    qrels_path = _find(root, "tasks/scifact/qrels/test.tsv.gz", task)
    qrels = read_qrels(qrels_path, task)
    queries = [q for q in read_jsonl(queries_path, task, ("_id", "text")) if str(q["_id"]) in qrels]
    corpus = read_jsonl(corpus_path, task, ("_id", "text"))
    if limit is not None:
        queries = spread(queries, limit)
        keep_q = {str(q["_id"]) for q in queries}
        qrels = {q: d for q, d in qrels.items() if q in keep_q}
        relevant = {d for docs in qrels.values() for d in docs}
        corpus = [c for i, c in enumerate(corpus) if i < 4 * limit or str(c["_id"]) in relevant]
    split = RetrievalSplitData(
        corpus=Dataset.from_dict({
            "id": [str(c["_id"]) for c in corpus],
            "text": [c["text"] for c in corpus],
            "title": [c.get("title") or "" for c in corpus],
        }),
        queries=Dataset.from_dict({"id": [str(q["_id"]) for q in queries], "text": [q["text"] for q in queries]}),
        relevant_docs=qrels,
        top_ranked=None,
    )
    texts = [q["text"] for q in queries] + [((c.get("title") or "") + " " + c["text"]).strip() for c in corpus]
    return Built({"default": {"test": split}}, [corpus_path, queries_path, qrels_path],
                 {"num_samples": len(corpus) + len(queries), "num_documents": len(corpus), "num_queries": len(queries)}, texts)


LOCAL: dict[str, LocalSpec] = {}


def _add(spec: LocalSpec) -> None:
    LOCAL[spec.task] = spec


# MTEB's STS tasks are embench's STS rows: mteb name -> (embench dataset, the parts MTEB scores; None: all)
MTEB_STS = {row.name: (row.name, None) for row in STS_DATASETS if row.format == "semeval"} | {
    "STSBenchmark": ("STSBenchmark", ("test",)),
    "SICK-R": ("SICKRelatedness", None),  # MTEB's SICK-R scores all 9,927 pairs (train + trial + test)
}
for _name, (_dataset, _parts) in MTEB_STS.items():
    _row = STS_BY_NAME[_dataset]
    _files = tuple(f"raw/{_row.raw}/{n}.gz" for part in _parts or _row.parts for n in _row.file_names(part))
    _add(LocalSpec(task=_name, kind="sts", files=_files, build=_sts(_dataset, _parts)))

_add(LocalSpec(task="Banking77Classification", kind="classification",
               files=("tasks/banking77/train.jsonl.gz", "tasks/banking77/test.jsonl.gz"),
               build=_classification("Banking77Classification", "banking77")))
_add(LocalSpec(task="EmotionClassification", kind="classification",
               files=("tasks/emotion/train.jsonl.gz", "tasks/emotion/test.jsonl.gz"),
               build=_classification("EmotionClassification", "emotion")))
_add(LocalSpec(task="TwentyNewsgroupsClustering", kind="clustering", files=("tasks/twentynewsgroups/test.jsonl.gz",),
               build=_twentynewsgroups,
               notes=("sample: MTEB clusters 10 sets (59,545 subject lines in all, drawn from train and test); "
                      "here one set of the test split's subject lines",)))
_add(LocalSpec(task="SciFact", kind="retrieval",
               files=("tasks/scifact/corpus.jsonl.gz", "tasks/scifact/queries.jsonl.gz", "tasks/scifact/qrels/test.tsv.gz"),
               build=_scifact))
_add(LocalSpec(task="TwitterURLCorpus", kind="pair", files=("tasks/twitterurl/train.jsonl.gz", "tasks/twitterurl/test.jsonl.gz"),
               build=_twitterurl,
               notes=("source: castorini's copy of the Twitter URL corpus (train + test joined, as MTEB's single test split); "
                      "its text normalisation and a few pairs differ from MTEB's copy",)))


def missing_files(root: DataRoot, task: str) -> list[Path]:
    """The files of ``task`` that the data root lacks (neither the file nor its .gz twin)."""
    out = []
    for rel in LOCAL[task].files:
        p = root.path / rel
        twin = p.with_suffix("") if p.suffix == ".gz" else p.with_name(p.name + ".gz")
        if not p.is_file() and not twin.is_file():
            out.append(p)
    return out
