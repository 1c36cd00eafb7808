"""`embench run` end to end with a tiny random BERT: output formats, resume, protocols, errors."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

import embench
from embench.cli import app
from embench.tasks import TASKS

runner = CliRunner()
STS_COLUMNS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R", "Avg."]


def _run(*args):
    result = runner.invoke(app, list(args))
    return result


@pytest.mark.slow
def test_tiny_model_runs_the_whole_suite_in_every_format(env, tiny_bert_dir):
    r = _run("run", "--model", str(tiny_bert_dir), "--suite", "sts-all", "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    rows = out["rows"]
    assert list(rows[0]) == ["model", *STS_COLUMNS]
    assert out["protocol"]["aggregation"] == "all" and out["scale"].startswith("fractions")
    assert out["metrics"]["STS12"].startswith("spearman correlation of cosine")
    assert all(-1 <= rows[0][c] <= 1 for c in STS_COLUMNS)
    csv = _run("run", "--model", str(tiny_bert_dir), "--format", "csv", "-q")
    assert csv.stdout.splitlines()[0] == ",".join(["model", *STS_COLUMNS])
    cells = csv.stdout.splitlines()[1].split(",")[1:]
    assert all(len(c.split(".")[1]) == 2 for c in cells)  # x100, two decimals
    assert float(cells[0]) == pytest.approx(100 * rows[0]["STS12"], abs=0.006)
    md = _run("run", "--model", str(tiny_bert_dir), "--format", "markdown", "-q")
    assert md.stdout.startswith("| model | STS12 |") and "---:" in md.stdout
    table = _run("run", "--model", str(tiny_bert_dir), "-q")
    assert "SICK-R" in table.stdout and "Avg." in table.stdout


@pytest.mark.slow
def test_tasks_given_with_a_suite_are_added_after_the_suites_own(env, tiny_bert_dir):
    from embench.api import resolve_tasks
    from embench.evaluation.suites import SUITES

    assert resolve_tasks("transfer", ["SST5", "MR"])[0] == [*SUITES.get("transfer").tasks, "SST5"]
    assert resolve_tasks(None, ["STS12"]) == (["STS12"], "summary")
    assert resolve_tasks(None, None)[0] == list(SUITES.get("sts-all").tasks)
    r = _run("run", "--model", str(tiny_bert_dir), "--suite", "sts-all", "-t", "STSBenchmark", "-t", "TREC",
             "--classifier", "prototyping", "--format", "json", "-q")
    assert r.exit_code == 0, r.output
    assert list(json.loads(r.stdout)["rows"][0]) == ["model", *STS_COLUMNS[:-1], "TREC", "Avg."]
    only = _run("run", "--model", str(tiny_bert_dir), "-t", "STS12", "--format", "json", "-q")  # alone: just that task
    assert list(json.loads(only.stdout)["rows"][0]) == ["model", "STS12", "Avg."]


@pytest.mark.slow
def test_sts_suite_shows_every_subset_and_aggregation(env, tiny_bert_dir):
    r = _run("run", "--model", str(tiny_bert_dir), "--suite", "sts", "--format", "csv", "-q")
    assert r.exit_code == 0, r.output
    frame = pd.read_csv(__import__("io").StringIO(r.stdout))
    sts12 = frame[frame.task == "STS12"]
    assert list(sts12.subset) == ["MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews", "all", "mean", "wmean"]
    assert list(frame.columns) == ["model", "task", "subset", "n", "pearson", "spearman"]
    assert list(frame[frame.task == "STS-B"].subset) == ["test"]  # one subset: its aggregates would repeat it


@pytest.mark.slow
def test_protocol_options_reach_the_records(env, tiny_bert_dir):
    r = _run("run", "--model", str(tiny_bert_dir), "--task", "SICK-R", "--task", "STS12", "--aggregation", "wmean",
             "--correlation", "pearson", "--text", "raw", "--sick-split", "full", "--similarity", "dot", "--pooling", "mean",
             "--layer", "1", "--max-length", "64", "--batch-size", "32", "-q", "--format", "json")
    assert r.exit_code == 0, r.output
    recs = embench.results(env / "results")
    assert {x.task for x in recs} == {"SICKRelatedness", "STS12"}
    sts12 = next(x for x in recs if x.task == "STS12")
    # the axes STS12 is scored under; --sick-split is SICK-R's alone and stays at its default in STS12's record
    assert sts12.protocol | {} == {**embench.EvalProtocol().to_dict(), "aggregation": "wmean", "correlation": "pearson", "text": "raw", "similarity": "dot"}
    assert next(x for x in recs if x.task == "SICKRelatedness").protocol["sick_split"] == "full"
    assert sts12.main_score == pytest.approx(sts12.scores["wmean"]["pearson"])
    assert (sts12.encoder["pooling"], sts12.encoder["layer"], sts12.encoder["max_length"]) == ("mean", 1, 64)
    assert sts12.provenance["batch_size"] == 32
    assert next(x for x in recs if x.task == "SICKRelatedness").scores["n"] == 9927


@pytest.mark.slow
def test_interrupted_run_keeps_finished_tasks_and_resumes(env, tiny_bert_dir, monkeypatch):
    sts14 = TASKS.get("STS14")
    real = type(sts14).prepare

    def interrupt(self, root, protocol):  # Ctrl-C while STS14 is being scored
        prepared = real(self, root, protocol)
        if self.name == "STS14":
            prepared.score = lambda embed: (_ for _ in ()).throw(KeyboardInterrupt)
        return prepared

    monkeypatch.setattr(type(sts14), "prepare", interrupt)
    r = _run("run", "--model", str(tiny_bert_dir))
    assert r.exit_code == 130 and "run the same command again to resume" in r.output
    assert sorted(x.task for x in embench.results(env / "results")) == ["STS12", "STS13"]
    monkeypatch.setattr(type(sts14), "prepare", real)
    ev = embench.evaluate(tiny_bert_dir)
    assert ev.status == {"STS12": "stored", "STS13": "stored", **{t: "computed" for t in ("STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness")}}
    again = embench.evaluate(tiny_bert_dir, overwrite=True)
    assert set(again.status.values()) == {"computed"}
    assert len(embench.results(env / "results")) == 7


@pytest.mark.slow  # over 1 s: the fast tier stays under a minute
def test_results_show_lists_stored_records(env, tiny_bert_dir):
    _run("run", "--model", str(tiny_bert_dir), "--task", "STS13", "-q")
    _run("run", "--model", str(tiny_bert_dir), "--task", "STS13", "--aggregation", "mean", "-q")
    r = _run("results", "show", "--format", "csv")
    assert r.exit_code == 0, r.output
    lines = [line for line in r.stdout.splitlines() if line.startswith(("table,", "scores,"))]  # the notes: rows of their own
    assert lines[0] == "table,model,aggregation,STS13,Avg.,note"  # only the setting that differs between rows is a column
    assert len(lines) == 3 and lines[1].split(",")[2] == "all" and lines[2].split(",")[2] == "mean"
    js = json.loads(_run("results", "show", "--format", "json").stdout)
    assert js["shared"]["correlation"] == "spearman" and [r["aggregation"] for r in js["rows"]] == ["all", "mean"]
    table = _run("results", "show", "--format", "markdown").stdout
    assert "shared by every row: " in table and "correlation=spearman" in table and "pooling=" in table
    # a filter that keeps nothing names itself and what the folder holds; an empty folder says it is empty
    none = _run("results", "show", "-m", "no-such-model", "-t", "STS13")
    said = " ".join(none.output.split())
    assert none.exit_code == 1 and "matches --model no-such-model and --task STS13; it holds 2 record(s) of model(s)" in said
    assert f"{tiny_bert_dir} on task(s) STS13" in said
    empty = _run("results", "show", "--results-dir", str(env / "empty"))
    assert empty.exit_code == 1 and f"no stored results in {env / 'empty'}" in " ".join(empty.output.split())
    (env / "a-file").write_text("x")
    wrong = _run("results", "show", "--results-dir", str(env / "a-file"))
    assert wrong.exit_code != 0 and "is a file, not a folder" in str(wrong.exception)  # main() prints it as one error


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--model", "MODEL", "--suite", "sts-al"], "unknown suite 'sts-al'. Did you mean 'sts-all'"),
        (["run", "--model", "MODEL", "--task", "STS-BB"], "unknown task 'STS-BB'. Did you mean"),
        (["run", "--model", "no/such/model/here"], "could not load model 'no/such/model/here'. Tried:"),
        (["run", "--model", "no/[red]such[/blue]"], "could not load model 'no/[red]such[/blue]'. Tried:"),  # not rich markup
        (["run", "--model", "MODEL", "--pooling", "clss"], "Did you mean 'cls'"),
        (["run", "--model", "MODEL", "--layer", "9"], "--layer 9 is out of range"),
        (["run", "--model", "MODEL", "--batch-size", "0"], "--batch-size must be at least 1"),
    ],
)
def test_bad_input_gives_one_clear_error(env, tiny_bert_dir, args, message, capsys):
    from embench.cli import main

    args = [str(tiny_bert_dir) if a == "MODEL" else a for a in args]
    monkey_argv = ["embench", *args]
    import sys

    old = sys.argv
    sys.argv = monkey_argv
    try:
        with pytest.raises(SystemExit) as e:
            main()
    finally:
        sys.argv = old
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in " ".join(err.split()), err
    assert "Traceback" not in err


def test_invalid_choice_is_rejected_by_the_parser(env, tiny_bert_dir):
    r = _run("run", "--model", str(tiny_bert_dir), "--aggregation", "median")
    assert r.exit_code == 2 and "median" in r.output


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_data_check_and_list_commands(env):
    r = _run("data", "check", "--format", "csv")
    assert r.exit_code == 0 and r.stdout.splitlines()[1].startswith("STS12,sts,20/20")
    assert "sts-all" in _run("list", "suites").stdout
    assert "first_last_avg" in _run("list", "poolers").stdout
    assert "all-MiniLM-L6-v2" in _run("list", "models").stdout


def test_tables_mark_the_best_model_bold_and_the_second_underlined():
    from embench.report.tables import render

    frame = pd.DataFrame({"STS12": [0.70, 0.7234, 0.72341, 0.65], "STS-B": [0.80, float("nan"), 0.79, 0.81]},
                         index=pd.Index(["a", "b", "c", "d_1"], name="model"))
    frame["Avg."] = frame.mean(axis=1, skipna=False)
    latex = render(frame, "latex", highlight=True).splitlines()
    # b and c print the same 72.34: both bold; a is second; NaN is neither; names are still escaped
    assert latex[4] == r"a & \underline{70.00} & \underline{80.00} & \underline{75.00} \\"
    assert latex[5] == r"b & \textbf{72.34} &  &  \\"
    assert latex[6] == r"c & \textbf{72.34} & 79.00 & \textbf{75.67} \\"
    assert latex[7] == r"d\_1 & 65.00 & \textbf{81.00} & 73.00 \\"
    md = render(frame, "markdown", highlight=True)
    assert "| c | **72.34** | 79.00 | **75.67** |" in md and "<u>80.00</u>" in md
    assert r"\textbf" not in render(frame, "latex")  # only when asked
    assert "**" not in render(frame.iloc[:1], "markdown", highlight=True)  # one model: nothing to rank


@pytest.mark.slow
def test_every_model_asked_gets_its_own_row_though_their_weights_share_one_record(env, tiny_bert_dir, one_thread,
                                                                                   monkeypatch):
    """Two --models whose folders share a last name (tiny-bert, other/tiny-bert) shared a table row, and a label was
    dropped; `-m ..` after `-m .` (the same weights) reused the record stored for `.` and was shown as `.`. Identical
    weights share one record; each model asked keeps its own row, under its own name or label."""
    import shutil

    other = env / "other" / tiny_bert_dir.name
    shutil.copytree(tiny_bert_dir, other)
    args = ["run", "-m", str(tiny_bert_dir), "-m", str(other), "-t", "STS13", "-q", "-f", "json"]
    labelled = _run(*args, "--label", "A", "--label", "B")
    assert labelled.exit_code == 0, labelled.output
    rows = json.loads(labelled.stdout)["rows"]
    assert [r["model"] for r in rows] == ["A", "B"] and rows[0]["STS13"] == rows[1]["STS13"]
    named = json.loads(_run(*args).stdout)["rows"]
    assert [r["model"] for r in named] == [str(tiny_bert_dir), str(other)]
    (env / "x").mkdir()
    shutil.copytree(tiny_bert_dir, env / "x" / "b")
    for f in tiny_bert_dir.iterdir():
        shutil.copy(f, env / "x" / f.name)
    monkeypatch.chdir(env / "x" / "b")
    here = embench.evaluate(".", tasks=["STS13"], progress=False)
    up = embench.evaluate("..", tasks=["STS13"], progress=False)
    assert up.status == {"STS13": "stored"} and up.records[0].main_score == here.records[0].main_score
    assert up.records[0].model == ".." and list(up.frame.index) == [".."]


@pytest.mark.slow
def test_a_label_names_a_seed_groups_row_which_stays_in_the_models_order(monkeypatch):
    """``run -m runs/grp -m models/tiny_two --label "My group" --label Tiny``: labels were keyed by each record's
    model, which for a seed group is a seed's, so the group's label was dropped; and the group's row was added below
    every model, here below Tiny, listed after it."""
    import embench.api
    from embench.evaluation.protocols import EvalProtocol
    from embench.evaluation.results import Record

    def rec(model: str, score: float) -> Record:
        return Record(task="STSBenchmark", display="STS-B", kind="sts", model=model, main_score=score, scores={},
                      protocol=EvalProtocol().to_dict(), encoder={})

    def evaluate(model, suite=None, label=None, **kw):  # names the rows by ``label`` as embench.evaluate does
        labels = {("grp" if model == "runs/grp" else model): label} if label else {}
        if model == "runs/grp":
            return embench.Evaluation(records=[rec(f"seed-{i}", 0.1 * i) for i in (1, 2, 3)],
                                      seed_groups={"grp": ["seed-1", "seed-2", "seed-3"]}, labels=labels)
        return embench.Evaluation(records=[rec(model, 0.5)], labels=labels)

    monkeypatch.setattr(embench.api, "evaluate", evaluate)
    out = _run("run", "-m", "runs/grp", "-m", "models/tiny_two", "--label", "My group", "--label", "Tiny", "-t", "STS-B", "-q", "-f", "json")
    assert out.exit_code == 0, out.output
    assert [r["model"] for r in json.loads(out.stdout)["rows"]] == ["My group (mean of 3 seeds)", "Tiny"]
    md = _run("run", "-m", "runs/grp", "-m", "models/tiny_two", "--label", "My group", "--label", "Tiny", "-t", "STS-B", "-q", "-f", "markdown").stdout
    assert "| My group (mean of 3 seeds) | <u>20.00</u> ± 10.00 |" in md  # the spread stays on the labelled row
    shown = embench.Evaluation.merge([evaluate("runs/grp"), evaluate("b")])
    shown.per_seed = True
    assert list(shown.frame.index) == ["seed-1", "seed-2", "seed-3", "grp (mean of 3 seeds)", "b"]


@pytest.mark.slow
def test_the_python_api_labels_a_seed_groups_row_too(env, tiny_bert_dir, one_thread):
    """``embench.evaluate(group, label=...)`` dropped the label (it never reached the group's row), as `run` had."""
    import embench

    group = env / "grp"
    group.mkdir()
    (group / "seeds.json").write_text(json.dumps({"members": {"1": str(tiny_bert_dir)}, "config": {}}))
    ev = embench.evaluate(str(group), tasks=["STS-B"], label="My group", progress=False)
    assert list(ev.frame.index) == ["My group (mean of 1 seed)"]
