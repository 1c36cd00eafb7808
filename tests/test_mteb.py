"""The MTEB bridge: mteb's own tasks and evaluators on slices of the local data (issue 4)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import spearmanr

from embench.api import evaluate, results
from embench.core.errors import MissingDataError, UnknownNameError
from embench.data.root import DataRoot
from embench.encoding.engine import Engine
from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.results import Record
from embench.evaluation.suites import MTEB_LITE, SUITES
from embench.models import load_model
from embench.tasks import TASKS
from embench.tasks.mteb.blocks import block_averages
from embench.tasks.mteb.local_data import SchemaError, spread
from embench.tasks.mteb.tasks import MTEBTask

pytestmark = pytest.mark.slow  # every test here imports mteb (about 5 s): the fast tier stays under a minute


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir):
    return load_model(tiny_bert_dir, pooling="mean", device="cpu")


def _score(task: MTEBTask, encoder, data_root, **protocol):
    prepared = task.prepare(DataRoot(data_root), EvalProtocol(**protocol))
    return prepared, prepared.score(Engine(encoder, batch_size=64).embed)


def test_mteb_lite_registers_twelve_mteb_tasks_beside_the_sts_tasks():
    suite = SUITES.get("mteb-lite")
    assert suite.tasks == tuple("MTEB:" + n for n in MTEB_LITE) and len(suite.tasks) == 12
    assert {"STS12", "STSBenchmark", "SICKRelatedness"} <= set(TASKS.names())
    assert TASKS.get("MTEB:STS12") is not TASKS.get("STS12")
    assert TASKS.get("MTEB:SICK-R").kind == "mteb"


@pytest.mark.slow
def test_import_embench_does_not_import_mteb():
    code = "import sys, embench, embench.tasks, embench.api; print('mteb' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize(
    ("name", "limit", "main_name"),
    [
        pytest.param("EmotionClassification", 120, "accuracy", marks=pytest.mark.slow),
        pytest.param("TwentyNewsgroupsClustering", 240, "v_measure", marks=pytest.mark.slow),
        pytest.param("SciFact", 12, "ndcg_at_10", marks=pytest.mark.slow),
        ("TwitterURLCorpus", 240, "max_ap"),
    ],
)
def test_each_task_kind_runs_through_mteb_on_a_slice(name, limit, main_name, tiny, data_root):
    from threadpoolctl import threadpool_limits

    task = MTEBTask(name, limit=limit)
    with threadpool_limits(1):  # sklearn's small fits thrash when BLAS threads share 2 busy cores
        prepared, out = _score(task, tiny, data_root)
    assert out.scores["main_score_name"] == main_name
    assert out.main == pytest.approx(out.scores[main_name]) and 0.0 <= out.main <= 1.0
    assert out.scores["mteb_result"]["task_name"] == name
    assert any("slice" in d for d in out.scores["data_differences"])
    assert any("in MTEB's copy" in d for d in out.scores["data_differences"])
    assert task.display == name + "*"
    assert out.meta["texts_requested_by_mteb"] > 0


@pytest.mark.slow
def test_mteb_sts_slice_equals_a_direct_spearman_of_cosines(minilm_path, data_root):
    """MiniLM on 100 STS-B test pairs: mteb's cosine_spearman equals scipy on the same vectors."""
    from embench.tasks.sts.scoring import similarity

    enc = load_model(minilm_path, device="cpu")
    task = MTEBTask("STSBenchmark", limit=100)
    _, out = _score(task, enc, data_root)
    g, _ = TASKS.get("STSBenchmark").read(DataRoot(data_root), "test", "raw")
    left, right, gold = spread(g.left, 100), spread(g.right, 100), spread(list(g.gold), 100)
    engine = Engine(enc, batch_size=64)
    direct = spearmanr(similarity(engine.embed(left), engine.embed(right)), gold)[0]
    assert out.main == pytest.approx(direct, abs=1e-6)
    assert out.scores["main_score_name"] == "cosine_spearman"


def test_mteb_task_reuses_the_embeddings_of_sts_all_and_scores_the_same(tiny_bert_dir, data_root, tmp_path):
    """STS-B under MTEB's text (raw) fills the cache; MTEB:STSBenchmark then encodes nothing and agrees.

    The local STS-B test split is MTEB's copy exactly (pairs, characters), so no difference is named.
    """
    opts = dict(data=data_root, results_dir=tmp_path / "res", cache_dir=tmp_path / "cache", pooling="mean", device="cpu")
    own = evaluate(str(tiny_bert_dir), None, tasks=["STSBenchmark"], text="raw", **opts).records[0]
    rec = evaluate(str(tiny_bert_dir), None, tasks=["MTEB:STSBenchmark"], **opts).records[0]
    assert own.provenance["texts_encoded"] > 0
    assert rec.provenance["texts_encoded"] == 0 and rec.provenance["texts_from_cache"] > 0
    # mteb computes cosines in float32, embench in float64: near-tied ranks of a random model move ~1e-6
    assert rec.main_score == pytest.approx(own.scores["all"]["spearman"], abs=1e-5)
    assert own.provenance["texts_encoded"] == rec.provenance["texts_from_cache"]
    assert rec.kind == "mteb" and rec.display == "STSBenchmark" and rec.scores["data_differences"] == []
    assert rec.provenance["task_meta"]["seed"] == 42


@pytest.mark.slow
def test_mteb_s_sick_r_and_embench_s_keep_a_column_each(tiny_bert_dir, data_root, tmp_path):
    """MTEB's SICK-R (all 9,927 pairs) and SentEval's (the 4,927 of its test split) were both shown as 'SICK-R':
    a table of both kept one score, silently, and averaged the rest."""
    from embench.tasks.report_tables import report_tables

    opts = dict(data=data_root, results_dir=tmp_path / "res", cache_dir=tmp_path / "cache", pooling="mean", device="cpu")
    ev = evaluate(str(tiny_bert_dir), None, tasks=["SICK-R", "MTEB:SICK-R"], **opts)
    own, theirs = (next(r for r in ev.records if r.task == t) for t in ("SICKRelatedness", "MTEB:SICK-R"))
    assert (own.display, theirs.display) == ("SICK-R", "MTEB:SICK-R") and own.main_score != theirs.main_score
    row = ev.frame.iloc[0]
    assert (row["SICK-R"], row["MTEB:SICK-R"]) == (own.main_score, theirs.main_score)
    assert row["Avg."] == pytest.approx((own.main_score + theirs.main_score) / 2)
    tables, _ = report_tables([tmp_path / "res"])  # the stored records: a table per kind, each with its column
    assert [(t.kind, list(t.frame.columns)) for t in tables] == [("sts", ["SICK-R"]), ("mteb", ["MTEB:SICK-R"])]


def test_results_are_written_in_mteb_format_and_read_back_by_mteb(tiny_bert_dir, data_root, tmp_path):
    import mteb

    from embench.tasks.mteb.adapter import export_records, mteb_model_name

    opts = dict(data=data_root, results_dir=tmp_path / "res", cache_dir=tmp_path / "cache", pooling="mean", device="cpu")
    if "MTEB:STS13[slice]" not in TASKS:  # a small slice, registered for this test only
        TASKS.add("MTEB:STS13[slice]", MTEBTask("STS13", limit=120, name="MTEB:STS13[slice]"))
    for normalize in (True, False):
        evaluate(str(tiny_bert_dir), None, tasks=["MTEB:STS13[slice]"], normalize=normalize, **opts)
    recs = results(tmp_path / "res")
    assert len(recs) == 2 and {r.encoder["normalize"] for r in recs} == {True, False}
    written = export_records(recs, tmp_path / "mteb")
    assert len(written) == 2 and all(p.is_file() for p in written)
    loaded = mteb.ResultCache(tmp_path / "mteb").load_results(
        models=[mteb_model_name(recs[0].model)], tasks=["STS13"], include_remote=False
    )
    scores = sorted(tr.get_score() for mr in loaded.model_results for tr in mr.task_results)
    assert scores == pytest.approx(sorted(r.main_score for r in recs))
    blocks = block_averages(recs)
    assert len(blocks) == 2 and all("normalised" in i for i in blocks.index)


def _rec(model: str, task: str, kind: str, score: float) -> Record:
    return Record(task=task, display=task, kind="mteb", model=model, main_score=score,
                  scores={"mteb_type": kind}, protocol={}, encoder={"normalize": True})


def test_block_average_is_the_mean_of_the_task_type_means():
    recs = [_rec("m", "a", "STS", 0.8), _rec("m", "b", "STS", 0.6), _rec("m", "c", "Classification", 0.5),
            _rec("n", "a", "STS", 0.7)]
    frame = block_averages(recs)
    assert frame.loc["m", "STS"] == pytest.approx(0.7)
    assert frame.loc["m", "Block avg."] == pytest.approx(0.6)
    assert frame.loc["m", "Task avg."] == pytest.approx((0.8 + 0.6 + 0.5) / 3)
    assert np.isnan(frame.loc["n", "Block avg."])  # a model that misses a type gets no block average


def test_unknown_mteb_task_name_lists_the_nearest_names():
    with pytest.raises(UnknownNameError) as e:
        TASKS.canonical("MTEB:Banking77Clasification")
    assert "MTEB:Banking77Classification" in str(e.value)


def test_any_mteb_task_resolves_by_name_and_reads_a_local_copy(tiny, tmp_path):
    assert TASKS.canonical("mteb:biosses") == "MTEB:BIOSSES"
    folder = tmp_path / "mteb" / "BIOSSES"
    folder.mkdir(parents=True)
    rows = [{"sentence1": f"cell {i} grows", "sentence2": f"cell {i % 7} divides", "score": float(i % 5)} for i in range(40)]
    (folder / "test.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    prepared, out = _score(TASKS.get("MTEB:BIOSSES"), tiny, tmp_path)
    assert prepared.meta["data_source"].startswith("local copy")
    assert -1.0 <= out.main <= 1.0 and out.scores["main_score_name"] == "cosine_spearman"


def test_other_mteb_task_without_local_copy_offline_says_where_to_put_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(MissingDataError) as e:
        TASKS.get("MTEB:BIOSSES").prepare(DataRoot(tmp_path), EvalProtocol())
    assert str(tmp_path / "mteb" / "BIOSSES") in str(e.value)


def _write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)


def test_missing_local_files_are_listed(tmp_path):
    _write_jsonl(tmp_path / "tasks" / "banking77" / "train.jsonl.gz", [{"text": "a", "label": "x"}])
    with pytest.raises(MissingDataError) as e:
        MTEBTask("Banking77Classification").prepare(DataRoot(tmp_path), EvalProtocol())
    assert "tasks/banking77/test.jsonl.gz" in str(e.value) and "train.jsonl" not in str(e.value)


def test_a_field_mteb_needs_missing_from_the_local_file_is_named(tmp_path):
    _write_jsonl(tmp_path / "tasks" / "banking77" / "train.jsonl.gz", [{"sentence": "a", "label": "x"}])
    _write_jsonl(tmp_path / "tasks" / "banking77" / "test.jsonl.gz", [{"text": "b", "label": "x"}])
    with pytest.raises(SchemaError) as e:
        MTEBTask("Banking77Classification").prepare(DataRoot(tmp_path), EvalProtocol())
    assert "'text'" in str(e.value) and "train.jsonl.gz:1" in str(e.value)


@pytest.mark.slow
def test_full_local_copies_are_compared_with_mtebs_own_statistics(data_root):
    """mteb computes its descriptive statistics on the local copy; what differs from the shipped ones is named."""
    import mteb

    from embench.tasks.mteb.load import load_into

    def differences(name):
        return load_into(mteb.get_task(name), DataRoot(data_root))[1]["data_differences"]

    assert differences("Banking77Classification") == []  # the same data: nothing to say (and the same 80.04)
    assert differences("SICK-R") == []
    scifact = differences("SciFact")  # same documents and queries, 17,860 more characters in the documents
    assert "test documents_text total_text_length: 7,789,311 here vs 7,771,451 in MTEB's copy" in scifact
    assert not [d for d in scifact if "queries" in d or "relevant" in d or "num_documents" in d]
    assert differences("EmotionClassification") == ["test label ids are numbered differently from MTEB's copy (same class sizes)"]
    assert "test num_samples: 51,524 here vs 51,534 in MTEB's copy" in differences("TwitterURLCorpus")


def test_mteb_run_takes_a_bare_task_name_as_mtebs(monkeypatch, capsys):
    """``embench mteb run -t STS16`` ran embench's SentEval STS16 and printed an empty MTEB block table."""
    import sys

    import embench.api
    from embench.cli import main
    from embench.core.errors import EmbenchError

    asked = []

    def evaluate(model, suite, tasks=None, **kw):
        asked.append((suite, tasks))
        raise EmbenchError("stop here")

    monkeypatch.setattr(embench.api, "evaluate", evaluate)
    monkeypatch.setattr(sys, "argv", ["embench", "mteb", "run", "-m", "m", "-t", "STS16", "-t", "mteb:SICK-R"])
    with pytest.raises(SystemExit):
        main()
    assert asked == [(None, ["MTEB:STS16", "mteb:SICK-R"])] and "stop here" in capsys.readouterr().err


def _sts13_slice() -> str:
    if "MTEB:STS13[slice]" not in TASKS:  # a small slice, registered for these tests only
        TASKS.add("MTEB:STS13[slice]", MTEBTask("STS13", limit=120, name="MTEB:STS13[slice]"))
    return "MTEB:STS13[slice]"


def test_an_mteb_record_names_the_seed_mteb_ran_with_and_a_given_1111_is_run(tiny_bert_dir, data_root, tmp_path):
    """``--seed 1111`` was run as mteb's 42 while the record said 1111: every seed equal to the protocol's default
    was taken for "none given". Unset, mteb's 42 runs and is named; given, 1111 included, the seed asked runs."""
    opts = dict(tasks=[_sts13_slice()], data=data_root, results_dir=tmp_path / "res", cache_dir=tmp_path / "cache",
                pooling="mean", device="cpu", progress=False)
    for seed, ran in ((None, 42), (1111, 1111), (42, 42), (7, 7)):
        ev = evaluate(str(tiny_bert_dir), seed=seed, **opts)
        rec = ev.records[0]
        assert (rec.protocol["seed"], rec.provenance["task_meta"]["seed"], rec.provenance["seed"]) == (ran, ran, ran)
        assert ev.status == {"MTEB:STS13[slice]": "stored" if seed == 42 else "computed"}  # 42 is the unset run's


def test_progress_off_silences_mteb_s_own_bars(tiny_bert_dir, data_root, tmp_path, capfd, monkeypatch):
    """``evaluate(progress=False)`` printed mteb's "Computing text hashes" bars (its statistics of a whole local copy,
    computed as the task is prepared); the CLI's -q prints none. A slice skips those statistics, so here its prepare
    draws such a bar itself."""
    real = MTEBTask.prepare

    def drawing_a_bar(self, root, protocol):
        from tqdm.auto import tqdm

        list(tqdm(range(3), desc="Computing text hashes"))
        return real(self, root, protocol)

    monkeypatch.setattr(MTEBTask, "prepare", drawing_a_bar)
    opts = dict(tasks=[_sts13_slice()], data=data_root, results_dir=tmp_path / "res", cache_dir=tmp_path / "cache",
                pooling="mean", device="cpu", overwrite=True)
    capfd.readouterr()
    evaluate(str(tiny_bert_dir), progress=False, **opts)
    assert "Computing text hashes" not in capfd.readouterr().err
    evaluate(str(tiny_bert_dir), progress=True, **opts)
    assert "Computing text hashes" in capfd.readouterr().err


def test_an_older_mteb_record_naming_1111_but_run_with_42_is_not_reused_for_1111(tiny_bert_dir, data_root, tmp_path):
    """Before, a record said seed 1111 where mteb ran 42 (its provenance says so): under the key of a run that asks
    for 1111, it is computed again, with a warning naming why."""
    from embench.evaluation.results import ResultStore

    opts = dict(tasks=[_sts13_slice()], data=data_root, results_dir=tmp_path / "res", cache_dir=tmp_path / "cache",
                pooling="mean", device="cpu", progress=False, seed=1111)
    rec = evaluate(str(tiny_bert_dir), **opts).records[0]
    path = ResultStore(tmp_path / "res").path(rec)
    old = json.loads(path.read_text())
    old["provenance"]["task_meta"]["seed"] = 42  # as an older embench wrote it (the key hashes no provenance)
    path.write_text(json.dumps(old))
    with pytest.warns(UserWarning, match=r"is not reused: it names seed 1111, but mteb ran with seed 42; it is computed again"):
        again = evaluate(str(tiny_bert_dir), **opts)
    assert again.status == {"MTEB:STS13[slice]": "computed"} and again.records[0].provenance["task_meta"]["seed"] == 1111


def test_mteb_run_latex_writes_the_data_notes_once_as_comments(monkeypatch):
    """``mteb run -f latex`` wrote the data-difference notes as raw text after ``\\end{tabular}`` (a task's ``_`` in
    them broke pdflatex), once per model. They are ``%`` comments now, as run's notes are, each task's once."""
    from typer.testing import CliRunner

    import embench.api
    from embench.cli import app

    diffs = ["test number_of_characters: 1,234 here vs 1,240 in MTEB's copy"]

    def evaluate(model, suite=None, **kw):
        return embench.api.Evaluation(records=[Record(
            task="MTEB:STS16", display="STS16*", kind="mteb", model=model, main_score=0.5 if model == "a" else 0.6,
            scores={"mteb_type": "STS", "data_differences": diffs}, protocol=EvalProtocol().to_dict(), encoder={})])

    monkeypatch.setattr(embench.api, "evaluate", evaluate)
    out = CliRunner().invoke(app, ["mteb", "run", "-m", "a", "-m", "b", "-t", "STS16", "-q", "-f", "latex"])
    assert out.exit_code == 0, out.output
    after = out.stdout.rsplit("\\end{tabular}", 1)[1]
    assert after.strip().splitlines() == ["% * local data differs from MTEB's copy:", f"%   STS16*: {diffs[0]}"]


def test_similarity_dot_is_said_not_to_apply_where_mteb_s_main_score_does_not_use_it(tiny, data_root):
    """``-t MTEB:STSBenchmark --similarity dot`` printed mteb's main score, the cosine Spearman, under a record saying
    dot (beside a ``spearman`` of dot products): `audit --knobs similarity` said the knob moved nothing. A task whose main
    score never uses the model's similarity (STS, classification, clustering, pair classification) now runs and is
    recorded with cosine, and a warning says so; retrieval keeps the similarity asked."""
    from embench.tasks.recorded_protocol import task_protocol

    for name in ("STSBenchmark", "Banking77Classification", "TwentyNewsgroupsClustering", "TwitterURLCorpus"):
        with pytest.warns(UserWarning, match=rf"--similarity dot: mteb's main score of {name} does not use"):
            assert task_protocol(TASKS.get("MTEB:" + name), EvalProtocol(similarity="dot")).similarity == "cosine"
    assert task_protocol(TASKS.get("MTEB:SciFact"), EvalProtocol(similarity="dot")).similarity == "dot"  # nDCG: dot ranks
    _, out = _score(MTEBTask("STSBenchmark", limit=100), tiny, data_root, similarity="dot")
    assert out.scores["spearman"] == out.scores["cosine_spearman"]  # mteb was given cosine, as the record says


def test_mteb_s_superseded_note_is_not_logged(tiny, data_root, caplog):
    """mteb's "The task 'STSBenchmark' is superseded by 'STSBenchmark.v2'" still printed on every fresh run (under -q
    too): mteb.evaluate says it through its logger as well, and only its ``warnings`` copy was filtered."""
    import logging

    with caplog.at_level(logging.WARNING):
        _score(MTEBTask("STSBenchmark", limit=100), tiny, data_root)
    assert not [r for r in caplog.records if "superseded" in r.getMessage()]
    assert not logging.getLogger("mteb.abstasks.abstask").filters  # the filter was for the call only
