"""Your own data as a task (``--task-file``): a pairs file holding STS-B's test split scores as STS-B does,
every protocol option moves its score as scipy says, classification files run SentEval's classifier, the
record keeps each file's checksum and a changed file is computed again, and a bad file is named by file,
key and line."""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

import embench
from embench.cli import app
from embench.core.errors import EmbenchError
from embench.data import DataRoot
from embench.encoding.engine import Engine
from embench.evaluation.protocols import EvalProtocol
from embench.tasks import TASKS
from embench.tasks.task_file import register_task_files
from embench.tasks.task_file.tasks import senteval_scale

pytestmark = pytest.mark.usefixtures("task_registry_restored")  # conftest.py

runner = CliRunner()
PAIRS_YAML = "name: {name}\nkind: pairs\nfiles:\n  test: {file}\ncolumns:\n  subset: genre\nscore_range: [0, 5]\n"


def stsb(data_root: Path, split: str = "test") -> list[tuple[str, str, str, str]]:
    """(sentence1, sentence2, score, genre) of STS-B's SentEval file, as the built-in task reads it."""
    lines = (data_root / "senteval/downstream/STS/STSBenchmark" / f"sts-{split}.csv").read_text(encoding="utf-8").splitlines()
    return [(f[5], f[6], f[4], f[0]) for f in (line.split("\t") for line in lines)]


def three_genres(data_root: Path, sizes: tuple[int, ...] = (30, 20, 10)) -> list[tuple[str, str, str, str]]:
    """STS-B test pairs of three genres, as a file with a subset column (unequal sizes: wmean is not mean)."""
    rows = stsb(data_root)
    genres = ("main-captions", "main-news", "main-forums")
    return [r for g, n in zip(genres, sizes, strict=True) for r in [x for x in rows if x[3] == g][:n]]


def write_pairs(folder: Path, rows, name: str = "my-sts", yaml: str = PAIRS_YAML) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pairs.tsv").write_text("sentence1\tsentence2\tscore\tgenre\n" + "".join("\t".join(r) + "\n" for r in rows),
                                      encoding="utf-8")
    (folder / "task.yaml").write_text(yaml.format(name=name, file="pairs.tsv"), encoding="utf-8")
    return folder / "task.yaml"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir, one_thread):
    return embench.load_model(tiny_bert_dir, pooling="mean", device="cpu")


def run(model, tmp_path: Path, data_root: Path, **kw):
    return embench.evaluate(model, data=data_root, results_dir=tmp_path / "results", cache_dir=tmp_path / "cache",
                            progress=False, **kw)


@pytest.mark.slow  # 2,758 texts through the tiny BERT
def test_a_pairs_file_holding_stsb_test_scores_exactly_as_the_builtin_stsb(tmp_path, data_root, tiny):
    task_file = write_pairs(tmp_path / "mine", stsb(data_root), name="stsb-copy",
                            yaml="name: {name}\nkind: pairs\nfiles: {file}\nscore_range: [0, 5]\n")
    builtin = run(tiny, tmp_path, data_root, tasks=["STSBenchmark"]).records[0]
    own = run(tiny, tmp_path, data_root, task_files=[task_file]).records[0]
    assert (own.task, own.kind) == ("stsb-copy", "sts")
    assert own.main_score == builtin.main_score and own.scores == builtin.scores  # every subset, aggregation, n
    assert own.items["digest"] == builtin.items["digest"]  # the same pairs and gold scores, in the same order
    assert own.provenance["texts_from_cache"] == builtin.provenance["texts_encoded"]  # the very texts STS-B encodes
    data = task_file.parent / "pairs.tsv"
    assert own.provenance["data_files"] == {str(task_file.resolve()): sha(task_file), str(data.resolve()): sha(data)}


@pytest.mark.slow  # five protocols over 120 texts of the tiny BERT
def test_correlation_similarity_and_aggregation_options_equal_scipy_on_the_same_vectors(tmp_path, data_root, tiny):
    rows = three_genres(data_root)
    task_file = write_pairs(tmp_path / "mine", rows)
    got = {p: run(tiny, tmp_path, data_root, task_files=[task_file], aggregation=p[0], correlation=p[1],
                  similarity=p[2]).records[0]
           for p in [("all", "spearman", "cosine"), ("all", "pearson", "cosine"), ("all", "spearman", "dot"),
                     ("mean", "spearman", "cosine"), ("wmean", "pearson", "dot")]}
    engine = Engine(tiny, cache_dir=tmp_path / "cache")  # the vectors the runs scored, from the cache
    a = engine.embed([r[0] for r in rows]).astype(np.float64)
    b = engine.embed([r[1] for r in rows]).astype(np.float64)
    gold, genre = np.array([float(r[2]) for r in rows]), np.array([r[3] for r in rows])
    sims = {"dot": (a * b).sum(1), "cosine": (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)}
    corr = {"spearman": lambda x, y: stats.spearmanr(x, y)[0], "pearson": lambda x, y: stats.pearsonr(x, y)[0]}

    def expected(agg: str, c: str, sim: str) -> float:
        if agg == "all":
            return corr[c](sims[sim], gold)
        per = [corr[c](sims[sim][genre == g], gold[genre == g]) for g in dict.fromkeys(genre)]
        return float(np.mean(per)) if agg == "mean" else float(np.average(per, weights=[30, 20, 10]))

    for p, record in got.items():
        assert record.main_score == pytest.approx(expected(*p), abs=1e-9), p
        assert record.protocol["aggregation"] == p[0] and list(record.scores["subsets"]) == list(dict.fromkeys(genre))
    scores = [r.main_score for r in got.values()]
    assert len({round(s, 6) for s in scores}) == len(scores)  # each option moved the score


def test_regressor_targets_are_mapped_onto_senteval_scale():
    gold = np.array([0.0, 0.25, 1.0])
    assert senteval_scale(gold, 0, 1) == pytest.approx([1.0, 2.0, 5.0])
    assert senteval_scale(gold * 100, 0, 100) == pytest.approx([1.0, 2.0, 5.0])
    assert senteval_scale(gold * 5, 0, 5) is not None and np.array_equal(senteval_scale(gold * 5, 0, 5), gold * 5)  # STS-B
    assert np.array_equal(senteval_scale(gold + 1, 1, 5), gold + 1)  # SICK-R's 1-5, as SentEval feeds them


@pytest.mark.slow  # two regressor trainings
def test_regressor_scoring_trains_on_train_and_is_invariant_to_the_declared_scale(tmp_path, data_root, tiny):
    splits = {s: stsb(data_root, s)[:n] for s, n in (("train", 64), ("dev", 40), ("test", 40))}

    def declare(folder: Path, low: float, high: float) -> Path:
        folder.mkdir()
        for s, rows in splits.items():  # the same pairs, scores mapped linearly onto [low, high]
            (folder / f"{s}.jsonl").write_text("".join(json.dumps(
                {"a": r[0], "b": r[1], "y": low + (high - low) * float(r[2]) / 5}) + "\n" for r in rows))
        (folder / "task.toml").write_text(
            f'name = "scaled-{folder.name}"\nkind = "pairs"\nscore_range = [{low}, {high}]\n'
            '[files]\ntrain = "train.jsonl"\ndev = "dev.jsonl"\ntest = "test.jsonl"\n'
            '[columns]\nsentence1 = "a"\nsentence2 = "b"\nscore = "y"\n')
        return folder / "task.toml"

    unit, sentevals = declare(tmp_path / "unit", 0, 1), declare(tmp_path / "senteval", 1, 5)
    res = {f: run(tiny, tmp_path, data_root, task_files=[f], scoring="regressor").records[0] for f in (unit, sentevals)}
    assert res[unit].main_score == pytest.approx(res[sentevals].main_score, abs=1e-12)  # [0, 1] -> [1, 5]: same targets
    assert res[unit].scores["dev_pearson"] == pytest.approx(res[sentevals].scores["dev_pearson"], abs=1e-12)
    assert res[unit].provenance["task_meta"]["scoring"] == "regressor" and res[unit].scores["n"] == 40
    cosine = run(tiny, tmp_path, data_root, task_files=[unit]).records[0]
    assert cosine.main_score != res[unit].main_score and "dev_pearson" not in cosine.scores


def test_regressor_without_a_dev_split_is_refused_and_without_train_scores_by_similarity(tmp_path, data_root):
    folder = tmp_path / "t"
    task_file = write_pairs(folder, stsb(data_root)[:10])
    (folder / "task.yaml").write_text(PAIRS_YAML.format(name="no-dev", file="pairs.tsv").replace(
        "  test: pairs.tsv\n", "  test: pairs.tsv\n  train: pairs.tsv\n"))
    register_task_files([task_file])
    with pytest.raises(EmbenchError, match=r"task.yaml: --scoring regressor .* selects on dev; files declares no dev"):
        TASKS.get("no-dev").prepare(DataRoot(data_root), EvalProtocol(scoring="regressor"))
    write_pairs(folder, stsb(data_root)[:10], name="test-only")
    register_task_files([task_file])
    prepared = TASKS.get("test-only").prepare(DataRoot(data_root), EvalProtocol(scoring="regressor"))
    assert prepared.meta["scoring"] == "cosine (no train split for a regressor)"


def labelled_mr(data_root: Path, each: int = 50) -> list[tuple[str, str]]:
    folder = data_root / "senteval/downstream/MR"
    return [(" ".join(line.split()), label) for label in ("pos", "neg")
            for line in (folder / f"rt-polarity.{label}").read_text(encoding="latin-1").splitlines()[:each]]


@pytest.mark.slow  # SentEval's nested 5 x 5-fold search, twice (the task, then by hand)
def test_a_classification_file_is_scored_by_senteval_nested_cross_validation(tmp_path, data_root, tiny):
    from embench.tasks.senteval import classifier, validation

    rows = labelled_mr(data_root)
    (tmp_path / "mr.csv").write_text("text,label\n" + "".join(f'"{t.replace(chr(34), chr(34) * 2)}",{y}\n' for t, y in rows),
                                     encoding="utf-8")
    (tmp_path / "mr.yaml").write_text("name: tiny-mr\nkind: classification\nfiles: mr.csv\nlabels: [neg, pos]\n")
    record = run(tiny, tmp_path, data_root, task_files=[tmp_path / "mr.yaml"], classifier="prototyping").records[0]
    assert (record.kind, record.scores["scheme"], record.scores["n"]) == ("transfer", "nested-kfold", 100)
    # by hand: SentEval's order (tokens, then label), the same vectors, SentEval's InnerKFoldClassifier
    order = sorted(range(len(rows)), key=lambda i: (len(rows[i][0].split()), rows[i][1] == "pos"))
    x = Engine(tiny, cache_dir=tmp_path / "cache").embed([rows[i][0] for i in order]).astype(np.float32)
    y = np.array([int(rows[i][1] == "pos") for i in order])
    want = validation.nested_cv(x, y, 2, classifier.get_config("prototyping"), seed=1111)
    assert record.main_score == want["test_acc"] and record.scores["test_acc_exact"] == want["test_acc_exact"]
    assert [f["penalty"] for f in record.scores["folds"]] == [f["penalty"] for f in want["folds"]]


@pytest.mark.slow  # SentEval's k-fold search on train, then a fit tested on test
def test_a_classification_file_with_train_and_test_is_scored_by_kfold_on_train_then_test(tmp_path, data_root, tiny):
    from embench.tasks.senteval import classifier, validation

    rows = labelled_mr(data_root, each=40)  # 40 pos then 40 neg: 30 + 30 to train on, 10 + 10 to test
    splits = {"train": rows[:30] + rows[40:70], "test": rows[30:40] + rows[70:]}
    for split, part in splits.items():
        (tmp_path / f"{split}.jsonl").write_text("".join(json.dumps({"text": t, "label": y}) + "\n" for t, y in part))
    (tmp_path / "mr.yaml").write_text("name: tiny-mr-kfold\nkind: classification\nfiles: {train: train.jsonl, test: test.jsonl}\n")
    record = run(tiny, tmp_path, data_root, task_files=[tmp_path / "mr.yaml"], classifier="prototyping").records[0]
    assert record.scores["scheme"] == "kfold-then-test" and (record.scores["n_train"], record.scores["n_test"]) == (60, 20)
    engine, want = Engine(tiny, cache_dir=tmp_path / "cache"), {}
    for split, part in splits.items():  # by hand: SentEval's order (tokens, then label), SentEval's KFoldClassifier
        order = sorted(part, key=lambda r: (len(r[0].split()), r[1] == "pos"))
        want[split] = (engine.embed([t for t, _ in order]).astype(np.float32), np.array([int(y == "pos") for _, y in order]))
    expected = validation.kfold_then_test(*want["train"], *want["test"], 2, classifier.get_config("prototyping"), seed=1111)
    assert record.main_score == expected["test_acc"]


@pytest.mark.parametrize(("files", "labels"), [("mr.csv", ""), ("{train: mr.csv, dev: test.csv, test: test.csv}", "labels: [neg, pos]\n")])
def test_a_classification_file_with_one_class_to_train_on_is_refused_before_any_encoding(tmp_path, data_root, files, labels):
    class NeverEncodes:
        fingerprint = "never"

        def encode(self, texts, **kw):
            raise AssertionError("encoded before the one-class check")

    (tmp_path / "mr.csv").write_text("text,label\ngood film,pos\nnice one,pos\nfine work,pos\n")
    (tmp_path / "test.csv").write_text("text,label\nbad film,neg\ngood film,pos\n")
    (tmp_path / "one.yaml").write_text(f"name: one-class\nkind: classification\nfiles: {files}\n{labels}")
    with pytest.raises(EmbenchError, match=r"mr.csv: every row has the label 'pos'; classification task 'one-class' .*one.yaml"):
        run(NeverEncodes(), tmp_path, data_root, task_files=[tmp_path / "one.yaml"], use_cache=False)


@pytest.mark.slow  # SentEval's train/dev/test classifier on 150 pairs
def test_a_pair_classification_file_with_three_splits_uses_senteval_split_classifier(tmp_path, data_root, tiny):
    sick = data_root / "senteval/downstream/SICK"
    parts = {"train": ("SICK_train.txt", 90), "dev": ("SICK_trial.txt", 30), "test": ("SICK_test_annotated.txt", 30)}
    for split, (name, n) in parts.items():
        lines = (sick / name).read_text(encoding="utf-8").splitlines()[1 : n + 1]
        (tmp_path / f"{split}.jsonl").write_text("".join(json.dumps(
            {"premise": f[1], "hypothesis": f[2], "label": f[4]}) + "\n" for f in (x.split("\t") for x in lines)))
    (tmp_path / "sick.yaml").write_text(
        "name: tiny-sick-e\nkind: pair-classification\nfiles: {train: train.jsonl, dev: dev.jsonl, test: test.jsonl}\n"
        "columns: {sentence1: premise, sentence2: hypothesis}\n")
    record = run(tiny, tmp_path, data_root, task_files=[tmp_path / "sick.yaml"]).records[0]
    assert record.scores["scheme"] == "train-dev-test" and (record.scores["n_train"], record.scores["n_test"]) == (90, 30)
    assert record.scores["features"] == "[|u-v|, u*v]" and record.main_score == record.scores["test_acc"]
    assert record.provenance["task_meta"]["labels"] == ["CONTRADICTION", "ENTAILMENT", "NEUTRAL"]


@pytest.mark.slow  # six evaluations of 80 texts
def test_the_record_keeps_each_files_checksum_and_a_changed_file_is_computed_again(tmp_path, data_root, tiny):
    rows = three_genres(data_root, (10, 10, 10))
    task_file = write_pairs(tmp_path / "mine", rows)
    data = task_file.parent / "pairs.tsv"
    first = run(tiny, tmp_path, data_root, task_files=[task_file])
    assert first.status == {"my-sts": "computed"}
    assert first.records[0].provenance["data_files"] == {str(task_file.resolve()): sha(task_file), str(data.resolve()): sha(data)}
    assert first.records[0].provenance["task_meta"]["task_file"] == str(task_file.resolve())
    assert run(tiny, tmp_path, data_root, task_files=[task_file]).status == {"my-sts": "stored"}
    data.write_text(data.read_text().replace(f"\t{rows[0][2]}\t", "\t0.000\t", 1))  # one gold score edited
    again = run(tiny, tmp_path, data_root, task_files=[task_file])  # other data: a record of its own (test_task_file_keys)
    assert again.status == {"my-sts": "computed"} and again.records[0].main_score != first.records[0].main_score
    assert again.records[0].provenance["data_files"][str(data.resolve())] == sha(data)
    assert again.records[0].key != first.records[0].key and len(embench.results(tmp_path / "results")) == 2
    # another task file of the same name, over identical data elsewhere: its own record, not the stored one
    other = write_pairs(tmp_path / "elsewhere", [(r[0], r[1], "0.000" if i == 0 else r[2], r[3]) for i, r in enumerate(rows)])
    with pytest.warns(UserWarning, match=r"not reused: it was computed from other files"):
        assert run(tiny, tmp_path, data_root, task_files=[other]).status == {"my-sts": "computed"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert run(tiny, tmp_path, data_root, task_files=[other]).status == {"my-sts": "stored"}
    assert not [w for w in caught if "not reused" in str(w.message)]


def test_the_same_task_reads_alike_from_tsv_csv_and_jsonl_declared_in_yaml_or_toml(tmp_path, data_root):
    rows = three_genres(data_root, (3, 3, 3)) + [('he said "no, never"', "a, b", "1.5", "quoted")]
    write_pairs(tmp_path / "tsv", rows, name="as-tsv")
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv/pairs.csv").write_text("s1,s2,gold,genre\r\n" + "".join(
        ",".join('"' + v.replace('"', '""') + '"' for v in r) + "\r\n" for r in rows), encoding="utf-8-sig")
    (tmp_path / "csv/task.toml").write_text('name = "as-csv"\nkind = "pairs"\nfiles = {test = "pairs.csv"}\n'
                                            'score_range = [0, 5]\ncolumns = {sentence1 = "s1", sentence2 = "s2", '
                                            'score = "gold", subset = "genre"}\n')
    (tmp_path / "jsonl").mkdir()
    (tmp_path / "jsonl/pairs.jsonl.gz").write_bytes(__import__("gzip").compress("".join(json.dumps(
        {"sentence1": r[0], "sentence2": r[1], "score": float(r[2]), "genre": r[3]}) + "\n" for r in rows).encode()))
    (tmp_path / "jsonl/task.yml").write_text(PAIRS_YAML.format(name="as-jsonl", file="pairs.jsonl.gz"))
    names = register_task_files([tmp_path / "tsv/task.yaml", tmp_path / "csv/task.toml", tmp_path / "jsonl/task.yml"])
    assert names == ["as-tsv", "as-csv", "as-jsonl"]
    for text in ("senteval", "raw"):
        prepared = [TASKS.get(n).prepare(DataRoot(data_root), EvalProtocol(text=text)) for n in names]
        assert prepared[0].texts == prepared[1].texts == prepared[2].texts
        assert prepared[0].meta["subsets"] == ["main-captions", "main-news", "main-forums", "quoted"]
    assert 'he said "no, never"' in prepared[0].texts


ERRORS = {  # task file text (with {file}), data file text -> the message, with the file and line it names
    "unknown kind": ("name: x\nkind: pair\nfiles: {file}\nscore_range: [0, 5]\n", None,
                     r"task.yaml:2: kind: unknown kind 'pair'; did you mean pairs"),
    "unknown key": ("name: x\nkind: pairs\nfiles: {file}\ncolums: {{}}\nscore_range: [0, 5]\n", None,
                    r"task.yaml:4: colums: unknown key; did you mean columns"),
    "missing column": ("name: x\nkind: pairs\nfiles: {file}\ncolumns:\n  score: gold\nscore_range: [0, 5]\n", None,
                       r"pairs.tsv:1: no column 'gold' for score \(the header has: sentence1, sentence2, score, genre\)"),
    "score out of range": (PAIRS_YAML, "sentence1\tsentence2\tscore\tgenre\na\tb\t1\tg\nc\td\t7.5\tg\n",
                           r"pairs.tsv:3: score 7.5 is outside its scale \[0, 5\]"),
    "tab inside a text": (PAIRS_YAML, "sentence1\tsentence2\tscore\tgenre\na\tb\t1\tg\nc\tx\td\t2\tg\n",
                          r"pairs.tsv:3: 5 tab-separated fields where the header has 4 \(a tab inside a text\?\)"),
    "empty sentence": (PAIRS_YAML, "sentence1\tsentence2\tscore\tgenre\n \tb\t1\tg\n", r"pairs.tsv:2: sentence1 is empty"),
    "not utf-8": (PAIRS_YAML, b"sentence1\tsentence2\tscore\tgenre\na\tb\t1\tg\n\xff\tb\t1\tg\n", r"pairs.tsv:3: not valid UTF-8"),
    "missing split file": ("name: x\nkind: pairs\nfiles:\n  test: nope.tsv\nscore_range: [0, 5]\n", None,
                           r"task.yaml:4: files.test: data file .*nope.tsv does not exist"),
    "no test split": ("name: x\nkind: pairs\nfiles:\n  train: {file}\nscore_range: [0, 5]\n", None,
                      r"task.yaml:3: files: a pairs task scores its test split"),
    "builtin name": ("name: STS-B\nkind: pairs\nfiles: {file}\nscore_range: [0, 5]\n", None,
                     r"task.yaml:1: name: 'STS-B' is taken by the task 'STSBenchmark'"),
    "no score range": ("name: x\nkind: pairs\nfiles: {file}\n", None, r"task.yaml: score_range: missing"),
    "bad score range": ("name: x\nkind: pairs\nfiles: {file}\nscore_range: [5, 0]\n", None,
                        r"task.yaml:4: score_range: expected \[min, max\] with min < max"),
    "invalid yaml": ("name: x\nkind: [pairs\n", None, r"task.yaml:3:1: not valid YAML: expected ',' or '\]', but got '<stream end>' "
                     r"\(while parsing a flow sequence at line 2, column 7\)"),
    "undeclared label": ("name: x\nkind: classification\nfiles: {file}\ncolumns: {{text: sentence1, label: genre}}\n"
                         "labels: [g, h]\n", "sentence1\tsentence2\tscore\tgenre\na\tb\t1\tg\nc\td\t2\tk\n",
                         r"pairs.tsv:3: label 'k' is not one of the declared labels: g, h"),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_a_bad_task_file_is_named_with_its_file_key_and_line(tmp_path, case):
    declared, data, message = ERRORS[case]
    (tmp_path / "task.yaml").write_text(declared.format(name="x", file="pairs.tsv"))
    payload = data if data is not None else "sentence1\tsentence2\tscore\tgenre\na\tb\t1\tg\n"
    (tmp_path / "pairs.tsv").write_bytes(payload if isinstance(payload, bytes) else payload.encode())
    with pytest.raises(EmbenchError, match=message):
        register_task_files([tmp_path / "task.yaml"])


def test_a_truncated_gzip_data_file_of_ones_own_is_not_said_to_be_fetched_by_a_download(tmp_path):
    """A damaged .gz was always told "fetch it again (`embench data download` replaces it)": advice for the files the
    data manifest lists, never for a task file's own data."""
    import gzip

    payload = gzip.compress(b"sentence1\tsentence2\tscore\tgenre\n" + b"a\tb\t1\tg\n" * 500)
    (tmp_path / "pairs.tsv.gz").write_bytes(payload[: len(payload) // 2])
    (tmp_path / "task.yaml").write_text(PAIRS_YAML.format(name="x", file="pairs.tsv.gz"))
    with pytest.raises(EmbenchError, match=r"pairs\.tsv\.gz: cannot decompress it .*replace it with a whole copy \(a file "
                                           r"the data manifest lists: fetch it again"):
        register_task_files([tmp_path / "task.yaml"])


def test_two_task_files_of_one_name_and_a_toml_mistake_are_refused(tmp_path, data_root):
    a, b = write_pairs(tmp_path / "a", stsb(data_root)[:5]), write_pairs(tmp_path / "b", stsb(data_root)[:5])
    with pytest.raises(EmbenchError, match=r"b/task.yaml: task name 'my-sts' is also declared by .*a/task.yaml"):
        register_task_files([a, b])
    (tmp_path / "a/task.toml").write_text('name = "t"\nkind = "pairs"\nfiles = "pairs.tsv"\nscore_range = "0-5"\n')
    with pytest.raises(EmbenchError, match=r"task.toml:4: score_range: expected \[min, max\]"):
        register_task_files([tmp_path / "a/task.toml"])


def test_list_tasks_shows_a_task_file_with_its_kind_and_sizes(tmp_path, data_root):
    task_file = write_pairs(tmp_path, three_genres(data_root, (4, 4, 4)), name="listed-sts")
    shown = runner.invoke(app, ["list", "tasks", "--task-file", str(task_file)])
    assert shown.exit_code == 0, shown.output
    line = next(x for x in shown.stdout.splitlines() if x.startswith("listed-sts"))
    assert "task file (pairs, test 12 pairs; 3 subsets)" in line and str(task_file) in line
    assert "STSBenchmark" in shown.stdout  # with the built-in ones
    wrong = runner.invoke(app, ["list", "suites", "--task-file", str(task_file)])
    assert isinstance(wrong.exception, EmbenchError) and "use it with `embench list tasks`" in str(wrong.exception)


@pytest.mark.slow  # the CLI loads two tiny models
def test_run_and_compare_take_task_files_and_run_their_tasks_by_default(env, tmp_path, data_root, tiny_bert_dir, tiny_model):
    from transformers import BertConfig, BertModel

    task_file = write_pairs(tmp_path / "mine", three_genres(data_root, (10, 10, 10)))
    r = runner.invoke(app, ["run", "-m", str(tiny_bert_dir), "--task-file", str(task_file), "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    assert list(json.loads(r.stdout)["rows"][0]) == ["model", "my-sts", "Avg."]  # the file's task alone
    p = runner.invoke(app, ["run", "-m", str(tiny_bert_dir), "--task-file", str(task_file), "-t", "my-sts",
                            "--correlation", "pearson", "--format", "json", "-q"])
    assert json.loads(p.stdout)["metrics"]["my-sts"].startswith("pearson correlation of cosine")
    # the regressor asked of a file with no train split: scored by similarity, and the run says so under its table
    g = runner.invoke(app, ["run", "-m", str(tiny_bert_dir), "--task-file", str(task_file), "-t", "my-sts",
                            "--scoring", "regressor"])
    assert g.exit_code == 0, g.output
    assert "--scoring regressor: my-sts has no train split, so it was scored by similarity" in " ".join(g.stderr.split())
    other = tiny_model("tiny-bert-one-layer", lambda vocab: BertModel(BertConfig(
        vocab_size=vocab, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)))
    c = runner.invoke(app, ["compare", "-m", str(tiny_bert_dir), "-m", str(other), "--task-file", str(task_file),
                            "--resamples", "200", "--format", "json", "-q"])
    assert c.exit_code == 0, c.output
    assert "my-sts" in c.stdout and "STS12" not in c.stdout


def test_stored_results_of_a_task_file_are_found_by_its_name_without_the_file():
    """`results show -t my-sts` (and export): a task file's task is registered only while its run reads the file."""
    from types import SimpleNamespace

    from embench.core.errors import UnknownNameError
    from embench.tasks.names import stored_task_names

    stored = [SimpleNamespace(task="my-sts"), SimpleNamespace(task="STSBenchmark")]
    assert stored_task_names(["my-sts", "STS-B"], stored) == {"my-sts", "STSBenchmark"}
    assert stored_task_names("sts-b", stored) == {"STSBenchmark"}
    with pytest.raises(UnknownNameError, match="unknown task 'my-stz'"):
        stored_task_names(["my-stz"], stored)


def test_a_subset_column_named_as_its_role_is_read_without_being_declared(tmp_path):
    """``columns`` defaults to a column named like the role: for ``subset`` too (it was ignored, and --aggregation
    mean or wmean silently gave the "all" score)."""
    from embench.tasks.task_file import FileTask

    rows = "".join(f"s{i}\tt{i}\t{i % 5}\t{'ab'[i % 2]}\n" for i in range(6))
    (tmp_path / "pairs.tsv").write_text("sentence1\tsentence2\tscore\tsubset\n" + rows, encoding="utf-8")
    (tmp_path / "pairs.jsonl").write_text("".join(
        f'{{"sentence1": "s{i}", "sentence2": "t{i}", "score": {i % 5}, "subset": "{"ab"[i % 2]}"}}\n' for i in range(6)))
    for data in ("pairs.tsv", "pairs.jsonl"):
        (tmp_path / "t.yaml").write_text(f"name: x\nkind: pairs\nfiles: {data}\nscore_range: [0, 5]\n")
        assert FileTask.load(tmp_path / "t.yaml").split("test").subsets == list("ababab"), data
    (tmp_path / "pairs.tsv").write_text("sentence1\tsentence2\tscore\tgenre\n" + rows, encoding="utf-8")
    (tmp_path / "t.yaml").write_text("name: x\nkind: pairs\nfiles: pairs.tsv\nscore_range: [0, 5]\n")
    assert FileTask.load(tmp_path / "t.yaml").split("test").subsets is None  # no such column: one set
    (tmp_path / "pairs.jsonl").write_text('{"sentence1": "a", "sentence2": "b", "score": 1, "subset": "g"}\n'
                                          '{"sentence1": "c", "sentence2": "d", "score": 2}\n')
    (tmp_path / "t.yaml").write_text("name: x\nkind: pairs\nfiles: pairs.jsonl\nscore_range: [0, 5]\n")
    with pytest.raises(EmbenchError, match=r"pairs.jsonl:2: key 'subset' is in some objects and not in others"):
        FileTask.load(tmp_path / "t.yaml").split("test")
