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

from .data.readers import iter_jsonl, open_text
from .data.root import DataRoot
from .core.errors import EmbenchError, MalformedDataError


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


# -- STS: reuse embench's own readers of the raw releases (the text MTEB feeds) -----------------
def _sts_year(name: str) -> Callable[[DataRoot, int | None], Built]:
    def build(root: DataRoot, limit: int | None) -> Built:
        from .tasks.sts import STS_YEARS

        year = next(y for y in STS_YEARS if y.name == name)
        left, right, gold, files = [], [], [], []
        for subset in year.subsets:
            g, f = year.read_subset(root, subset, "raw")
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


def _stsb(root: DataRoot, limit: int | None) -> Built:
    from .tasks.sts import STSBenchmark

    g, path = STSBenchmark().read_split(root, "test", "raw")
    return _sts_built(g.left, g.right, [float(x) for x in g.gold], [path], limit)


def _sickr(root: DataRoot, limit: int | None) -> Built:
    """MTEB's SICK-R scores all 9,927 pairs (train + trial + test) as its "test" split."""
    from .tasks.sts import SICK_FILES, SICKRelatedness

    task = SICKRelatedness()
    left, right, gold, files = [], [], [], []
    for part in SICK_FILES:
        g, path = task.read_part(root, part, "raw")
        left += g.left
        right += g.right
        gold += [float(x) for x in g.gold]
        files.append(path)
    return _sts_built(left, right, gold, files, limit)


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


_STS_RAW = {
    "STS12": ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    "STS13": ("FNWN", "headlines", "OnWN"),
    "STS14": ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    "STS15": ("answers-forums", "answers-students", "belief", "headlines", "images"),
    "STS16": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}
for _name, _subsets in _STS_RAW.items():
    _add(LocalSpec(_name, "sts", tuple(f"raw/sts/{_name}/STS.{k}.{s}.txt.gz" for s in _subsets for k in ("input", "gs")), _sts_year(_name)))
_add(LocalSpec("STSBenchmark", "sts", ("raw/sts/STSBenchmark/sts-test.csv.gz",), _stsb))
_add(LocalSpec("SICK-R", "sts", tuple(f"raw/sick2014/{f}.gz" for f in ("SICK_train.txt", "SICK_trial.txt", "SICK_test_annotated.txt")), _sickr))
_add(LocalSpec("Banking77Classification", "classification",
               ("tasks/banking77/train.jsonl.gz", "tasks/banking77/test.jsonl.gz"), _classification("Banking77Classification", "banking77")))
_add(LocalSpec("EmotionClassification", "classification",
               ("tasks/emotion/train.jsonl.gz", "tasks/emotion/test.jsonl.gz"), _classification("EmotionClassification", "emotion")))
_add(LocalSpec("TwentyNewsgroupsClustering", "clustering", ("tasks/twentynewsgroups/test.jsonl.gz",), _twentynewsgroups,
               ("sample: MTEB clusters 10 sets (59,545 subject lines in all, drawn from train and test); "
                "here one set of the test split's subject lines",)))
_add(LocalSpec("SciFact", "retrieval",
               ("tasks/scifact/corpus.jsonl.gz", "tasks/scifact/queries.jsonl.gz", "tasks/scifact/qrels/test.tsv.gz"), _scifact))
_add(LocalSpec("TwitterURLCorpus", "pair", ("tasks/twitterurl/train.jsonl.gz", "tasks/twitterurl/test.jsonl.gz"), _twitterurl,
               ("source: castorini's copy of the Twitter URL corpus (train + test joined, as MTEB's single test split); "
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


def compare_counts(local: dict[str, int], published: dict | None, eval_split: str) -> list[str]:
    """Differences between the local counts and the descriptive statistics mteb ships for the task."""
    if not published or eval_split not in published:
        return []
    stats = published[eval_split]
    diffs = []
    for key, value in local.items():
        if key.startswith("train_"):
            ref = (published.get("train") or {}).get(key.removeprefix("train_"))
            label = f"train {key.removeprefix('train_')}"
        else:
            ref, label = stats.get(key), f"{eval_split} {key}"
        if isinstance(ref, int) and ref != value:
            diffs.append(f"{label}: {value:,} here vs {ref:,} in MTEB's copy")
    return diffs


def _leaves(d: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(_leaves(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(d, (int, float)) and not isinstance(d, bool):
        out[prefix] = d
    return out


def compare_statistics(mteb_task: Any, published: dict | None, eval_split: str) -> list[str]:
    """mteb's own descriptive statistics of the loaded local data against those it ships for the task.

    Every integer statistic that differs is named (sample, document, query, pair and relevant-doc
    counts, characters per text field, unique texts; not ``unique_pairs``, whose definition changed
    between mteb versions: :func:`compare_counts` checks it the shipped way); class sizes are compared as a multiset, so a
    copy that numbers its labels differently but has the same classes says only that.
    """
    if not published or eval_split not in published:
        return []
    try:
        subset = "default" if "default" in mteb_task.dataset else None
        local = mteb_task._calculate_descriptive_statistics_from_split(eval_split, hf_subset=subset)
    except Exception as e:  # a task type whose statistics mteb cannot compute on this copy
        return [f"mteb could not compute its statistics on the local copy ({type(e).__name__}); counts not compared"]
    here, ref = _leaves(local), _leaves(published[eval_split])
    out = []
    labels_here = sorted(v for k, v in here.items() if k.startswith("label_statistics.labels.") and k.endswith(".count"))
    labels_ref = sorted(v for k, v in ref.items() if k.startswith("label_statistics.labels.") and k.endswith(".count"))
    for key, value in ref.items():
        if key.startswith("label_statistics.labels.") or not isinstance(value, int) or isinstance(value, bool):
            continue
        if key.endswith("unique_pairs"):  # counted symmetrically by this mteb, not by the one that made the shipped stats
            continue
        mine = here.get(key)
        if isinstance(mine, (int, float)) and mine != value:
            out.append(f"{eval_split} {key.replace('_statistics.', ' ')}: {int(mine):,} here vs {value:,} in MTEB's copy")
    if labels_ref and labels_here != labels_ref:
        out.append(f"{eval_split} class sizes differ from MTEB's copy ({len(labels_here)} classes here, {len(labels_ref)} there)")
    elif labels_ref:
        same_ids = all(here.get(k) == v for k, v in ref.items() if k.startswith("label_statistics.labels.") and k.endswith(".count"))
        if not same_ids:
            out.append(f"{eval_split} label ids are numbered differently from MTEB's copy (same class sizes)")
    return out


def local_copy(root: DataRoot, task: str) -> Path | None:
    """A user-supplied copy of the hub dataset of ``task``: ``<root>/mteb/<task>/``, if present."""
    folder = root.path / "mteb" / task
    return folder if folder.is_dir() else None


def load_into(mteb_task: Any, root: DataRoot, limit: int | None = None) -> tuple[list[Path], dict[str, Any], list[str]]:
    """Fill ``mteb_task.dataset`` from the data root; returns (files read, meta, texts).

    Order: embench's builder for the task; else a local copy of the hub dataset in
    ``<root>/mteb/<task>/``; else mteb's own ``load_data`` (the hub, where it is reachable).
    """
    name = mteb_task.metadata.name
    eval_split = mteb_task.eval_splits[0]
    published = _published_stats(mteb_task)
    if name in LOCAL:
        absent = missing_files(root, name)
        if absent:
            listing = "\n".join(f"  - {p}" for p in absent)
            from .core.errors import MissingDataError

            err = MissingDataError(absent[0], task=f"MTEB:{name}", root=root.path)
            err.args = (f"MTEB:{name} needs {len(absent)} file(s) missing from the data root {root.path}:\n{listing}\n"
                        f"Point --data / EMBENCH_DATA at a data root that has them (`embench data check` lists what is present).",)
            raise err
        built = LOCAL[name].build(root, limit)
        mteb_task.dataset = built.dataset
        mteb_task.data_loaded = True
        check_schema(mteb_task, built.files)
        differences = list(LOCAL[name].notes) + built.notes + compare_counts(built.counts, published, eval_split)
        if limit is not None:
            differences.insert(0, f"slice: {limit} items spread over the data only")
        else:  # the whole local copy: every statistic mteb ships for the task, computed by mteb on ours
            seen = {d.split(":", 1)[0].replace("_statistics.", " ") for d in differences}
            differences += [d for d in compare_statistics(mteb_task, published, eval_split) if d.split(":", 1)[0] not in seen]
        meta = {"data_source": "embench data root", "local_counts": built.counts, "data_differences": differences}
        return built.files, meta, built.texts
    copy = local_copy(root, name)
    if copy is not None:
        mteb_task.metadata = mteb_task.metadata.model_copy(update={"dataset": {"path": str(copy), "revision": None}})
        source = f"local copy {copy}"
    else:
        source = f"hub {mteb_task.metadata.dataset.get('path')}@{mteb_task.metadata.dataset.get('revision')}"
    try:
        mteb_task.load_data()
    except Exception as e:  # offline, missing repo, unreadable local copy
        from .core.errors import MissingDataError

        where = f"the local copy {copy}" if copy is not None else f"the hub ({source})"
        err = MissingDataError(root.path / "mteb" / name, task=f"MTEB:{name}", root=root.path)
        err.args = (f"MTEB:{name}: embench has no local reader for this task and {where} could not be read "
                    f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}). Put a copy of its hub dataset "
                    f"in {root.path / 'mteb' / name} or allow hub access (HF_HUB_OFFLINE unset).",)
        raise err from e
    if copy is not None:  # mteb's result records a dataset revision; name the copy instead
        mteb_task.metadata = mteb_task.metadata.model_copy(update={"dataset": {"path": str(copy), "revision": "local-copy"}})
    files = sorted(p for p in copy.rglob("*") if p.is_file()) if copy is not None else []
    return files, {"data_source": source, "data_differences": []}, []


def _published_stats(mteb_task: Any) -> dict | None:
    try:
        return mteb_task.metadata.descriptive_stats
    except Exception:  # a task without shipped statistics
        return None


REQUIRED_COLUMNS = {
    "sts": lambda t: [*t.column_names, "score"],
    "classification": lambda t: [t.input_column_name, t.label_column_name],
    "clustering": lambda t: [t.input_column_name, t.label_column_name],
    "pair": lambda t: [t.input1_column_name, t.input2_column_name, t.label_column_name],
}


def task_kind(mteb_task: Any) -> str:
    from mteb.abstasks import AbsTaskClassification, AbsTaskPairClassification, AbsTaskRetrieval, AbsTaskSTS

    for cls, kind in ((AbsTaskSTS, "sts"), (AbsTaskClassification, "classification"),
                      (AbsTaskPairClassification, "pair"), (AbsTaskRetrieval, "retrieval")):
        if isinstance(mteb_task, cls):
            return kind
    if "Clustering" in type(mteb_task).__mro__[1].__name__ or mteb_task.metadata.type == "Clustering":
        return "clustering"
    return mteb_task.metadata.type.lower()


def check_schema(mteb_task: Any, files: list[Path]) -> None:
    """The columns mteb's evaluator will read must be in ``task.dataset``; else name the field."""
    kind = task_kind(mteb_task)
    where = ", ".join(str(f) for f in files[:3])
    if kind == "retrieval":
        for split in mteb_task.eval_splits:
            data = mteb_task.dataset["default"][split]
            for part, cols in (("corpus", ("id", "text")), ("queries", ("id", "text"))):
                missing = [c for c in cols if c not in data[part].column_names]
                if missing:
                    raise SchemaError(f"mteb's {mteb_task.metadata.name} needs field {missing[0]!r} in its {part} ({where})")
        return
    need = REQUIRED_COLUMNS.get(kind)
    if need is None:
        return
    cols = [c for c in need(mteb_task) if isinstance(c, str)]
    splits = list(mteb_task.eval_splits) + ([mteb_task.train_split] if kind == "classification" else [])
    for split in splits:
        if split not in mteb_task.dataset:
            raise SchemaError(f"mteb's {mteb_task.metadata.name} needs a {split!r} split; the local data has {sorted(mteb_task.dataset)} ({where})")
        have = mteb_task.dataset[split].column_names
        missing = [c for c in cols if c not in have]
        if missing:
            raise SchemaError(f"mteb's {mteb_task.metadata.name} needs field {missing[0]!r} in split {split!r}; the local data has {have} ({where})")
