"""First use on a bare machine (issue 36): what the README's commands need is installed or named."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "install-report-tools"


def _fake_bin(tmp_path: Path, uid: int, present: tuple[str, ...] = ()) -> Path:
    """A PATH holding only a fake ``id`` (printing ``uid``), a fake ``apt-get`` that logs its arguments, and ``present``."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    scripts = {"id": f"echo {uid}", "apt-get": f'echo "$@" >> {tmp_path / "apt.log"}'}
    scripts.update({tool: "exit 0" for tool in present})
    for name, body in scripts.items():
        (bin_ / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_ / name).chmod(0o755)
    return bin_


def _run(bin_: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/bash", str(SCRIPT)], env={"PATH": str(bin_)}, capture_output=True, text=True)


def test_report_tools_are_installed_with_apt_get_as_root(tmp_path):
    done = _run(_fake_bin(tmp_path, 0))
    assert done.returncode == 0, done.stderr
    calls = (tmp_path / "apt.log").read_text().splitlines()
    assert calls[0] == "update -qq" and calls[1].startswith("install -y -qq --no-install-recommends")
    assert set(calls[1].split()) >= {"texlive-latex-base", "texlive-latex-recommended", "poppler-utils", "chromium"}
    assert "installing" in done.stderr


def test_without_root_the_script_names_what_to_install_and_fails(tmp_path):
    done = _run(_fake_bin(tmp_path, 1000))
    assert done.returncode == 1 and not (tmp_path / "apt.log").exists()
    assert "apt-get install texlive-latex-base texlive-latex-recommended poppler-utils chromium" in done.stderr


def test_nothing_is_installed_when_every_tool_is_there(tmp_path):
    done = _run(_fake_bin(tmp_path, 0, present=("pdflatex", "pdftoppm", "pdftotext", "pdffonts", "chromium")))
    assert done.returncode == 0 and done.stderr == "" and not (tmp_path / "apt.log").exists()


@pytest.mark.parametrize("tool", ["pdflatex", "chromium"])
def test_one_missing_tool_is_enough_to_install(tmp_path, tool):
    present = tuple(t for t in ("pdflatex", "pdftoppm", "pdftotext", "pdffonts", "chromium") if t != tool)
    assert _run(_fake_bin(tmp_path, 0, present)).returncode == 0
    assert "install" in (tmp_path / "apt.log").read_text()


# --- silent surprises (item 4) ----------------------------------------------------------------------

def _record(model: str, task: str, score: float, kind: str = "sts", layer: int | None = 6, **protocol):
    from embench.evaluation.protocols import EvalProtocol
    from embench.evaluation.results import Record, record_key

    proto = {**EvalProtocol().to_dict(), **protocol}
    enc = {"fingerprint": model, "pooling": "mean", "layer": layer, "max_length": 256, "dtype": "fp32", "prompt": ""}
    return Record(task=task, display=task, kind=kind, model=model, main_score=score, scores={}, protocol=proto,
                  encoder=enc, key=record_key(task, enc, proto))


def _store(root: Path, records) -> Path:
    from embench.evaluation.results import ResultStore

    store = ResultStore(root)
    for r in records:
        store.save(r)
    return store.root


def test_results_show_keeps_a_models_sts_and_transfer_scores_on_one_row_and_layers_as_integers(tmp_path):
    from typer.testing import CliRunner

    from embench.cli.app import app

    # STS under the default classifier, MR under prototyping: the classifier is no STS setting, so one row
    root = _store(tmp_path / "results", [_record("m", "STS12", 0.70), _record("m", "STS13", 0.80),
                                         _record("m", "MR", 0.75, kind="transfer", classifier="prototyping"),
                                         _record("m", "STS12", 0.60, layer=12), _record("m", "STS13", 0.65, layer=12)])
    r = CliRunner().invoke(app, ["results", "show", "--results-dir", str(root), "--format", "csv"])
    assert r.exit_code == 0, r.output
    lines = r.output.strip().splitlines()
    assert lines[0] == "table,model,layer,STS12,STS13,MR,Avg.,note"  # the shared settings: notes rows of their own
    rows = [line.split(",")[1:-1] for line in lines if line.startswith("scores,")]
    assert rows[0] == ["m", "6", "70.00", "80.00", "75.00", "75.00"]  # MR joins the row it does not contradict
    assert rows[1] == ["m", "12", "60.00", "65.00", "", ""]  # layer 12, not 12.0; MR was stored at layer 6 only
    assert len(rows) == 2


def test_a_name_that_matches_no_record_is_a_warning_that_lists_the_models(tmp_path):
    from typer.testing import CliRunner

    from embench.cli.app import app

    root = _store(tmp_path / "results", [_record("model-a", "STS12", 0.7)])
    r = CliRunner().invoke(app, ["report", "--results", str(root), "--name", "modle-a=A", "--name", "model-a=Ours"])
    assert r.exit_code == 0, r.output
    assert "--name modle-a=A: no record or analysis output has the model 'modle-a'" in r.output
    assert "models found: model-a" in r.output and "model-a=Ours" not in r.output  # the name used says nothing


@pytest.mark.slow  # encodes STS12 with the real model (about 12 s)
def test_a_data_root_that_does_not_exist_is_an_error_even_when_every_record_is_stored(env, minilm_path):
    import embench
    from embench.core.errors import EmbenchError

    embench.evaluate(str(minilm_path), tasks=["STS12"], progress=False)  # stored
    with pytest.raises(EmbenchError, match="data root .*nowhere does not exist"):
        embench.evaluate(str(minilm_path), tasks=["STS12"], data=env / "nowhere", progress=False)


def test_an_alias_in_another_case_is_stored_under_its_registered_name_with_a_warning():
    from embench.models.aliases import alias_name

    with pytest.warns(UserWarning, match="'all-minilm-L6-v2' is read as 'all-MiniLM-L6-v2'"):
        assert alias_name("all-minilm-L6-v2") == "all-MiniLM-L6-v2"
    assert alias_name("sentence-transformers/all-MiniLM-L6-v2") == "all-MiniLM-L6-v2"  # one model, one name
    assert alias_name("./my-model") == "./my-model"


# --- output off a terminal (item 3) -----------------------------------------------------------------

@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_messages_off_a_terminal_are_one_line_however_long(tmp_path):
    import sys

    long = tmp_path / ("a-folder-with-a-long-name-" * 6) / "data"
    done = subprocess.run([sys.executable, "-m", "embench.cli", "data", "check", "--data", str(long)],
                          capture_output=True, text=True, env={**__import__("os").environ, "COLUMNS": "60"})
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and str(long) in lines[0], done.stderr  # the path is never cut


def test_data_check_fails_on_a_damaged_file_and_passes_on_a_partial_root(tmp_path):
    import hashlib
    import json

    from typer.testing import CliRunner

    from embench.cli.app import app

    root = tmp_path / "data"
    (root / "corpora").mkdir(parents=True)
    (root / "corpora" / "a.txt").write_bytes(b"as released\n")
    entries = [{"path": "corpora/a.txt", "task": "corpora", "url": "http://x/a", "sha256": hashlib.sha256(b"as released\n").hexdigest()},
               {"path": "corpora/b.txt", "task": "corpora", "url": "http://x/b", "sha256": "0" * 64}]
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"version": 1, "files": entries}))
    ok = CliRunner().invoke(app, ["data", "check", "--data", str(root), "--manifest", str(manifest), "--files"])
    assert ok.exit_code == 0, ok.output  # b.txt missing: a partial root
    (root / "corpora" / "a.txt").write_bytes(b"edited\n")
    bad = CliRunner().invoke(app, ["data", "check", "--data", str(root), "--manifest", str(manifest), "--files"])
    assert bad.exit_code == 1 and "1 damaged file(s)" in bad.output and "corpora/a.txt" in bad.output


# --- the Python API in notebooks and logs (item 2) --------------------------------------------------

@pytest.mark.slow
def test_a_sentence_transformer_object_shares_the_cache_and_records_of_its_folder_and_shows_progress_off_a_terminal(
        env, minilm_path, monkeypatch, capsys):
    import sentence_transformers

    import embench

    monkeypatch.setenv("EMBENCH_PROGRESS_EVERY", "0")
    by_name = embench.evaluate("all-MiniLM-L6-v2", tasks=["STS12"])
    assert by_name.encode_stats["encoded"] > 0
    assert "encoding all-MiniLM-L6-v2:" in capsys.readouterr().err  # progress lines with stderr captured (no terminal)
    obj = sentence_transformers.SentenceTransformer(str(minilm_path), device="cpu")
    again = embench.evaluate(obj, tasks=["STS12"], label="MiniLM (object)")
    assert again.status == {"STS12": "stored"} and again.records[0].main_score == by_name.records[0].main_score
    assert list(again.frame.index) == ["MiniLM (object)"]
    obj.max_seq_length = 16  # no longer what its folder holds: its own cache key and records, under its label
    changed = embench.evaluate(obj, tasks=["STS12"], label="MiniLM-16")
    assert changed.status == {"STS12": "computed"} and changed.records[0].model == "MiniLM-16"
    assert changed.records[0].main_score != by_name.records[0].main_score


def test_the_python_api_stores_records_apart_from_the_command_lines_results_folder(monkeypatch, tmp_path):
    from embench.evaluation.results import default_results_dir

    monkeypatch.delenv("EMBENCH_RESULTS", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_results_dir(cli=True) == Path("results")
    assert default_results_dir() == tmp_path / ".cache" / "embench" / "results"
    monkeypatch.setenv("EMBENCH_RESULTS", str(tmp_path / "mine"))
    assert default_results_dir() == default_results_dir(cli=True) == tmp_path / "mine"


# --- words meant for users (item 7) -----------------------------------------------------------------

@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_a_bad_choice_is_one_plain_usage_error_without_pydantics_words():
    import sys

    done = subprocess.run([sys.executable, "-m", "embench.cli", "run", "-m", "x", "--aggregation", "median"],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert "Invalid value for '--aggregation': 'median' is not one of 'all', 'mean', 'wmean'." in done.stderr
    assert "Value error" not in done.stderr and "Traceback" not in done.stderr


def test_embench_warnings_are_one_warning_line_without_source_code(capsys):
    import warnings

    from embench.cli.output import show_warning
    from embench.models.aliases import alias_name

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        alias_name("ALL-MINILM-L6-V2")
    w = caught[0]
    from embench.models import loader

    show_warning(w.message, w.category, loader.__file__, w.lineno)  # in the CLI its caller is the loader
    err = capsys.readouterr().err
    assert err.startswith("warning: model 'ALL-MINILM-L6-V2' is read as 'all-MiniLM-L6-v2'") and err.count("\n") == 1
    assert "UserWarning" not in err and ".py" not in err


def test_an_unknown_training_option_names_set_and_where_the_options_are_listed():
    from embench.core.errors import EmbenchError
    from embench.train import make_config

    # in Python the option is a keyword of make_config's (`embench train` says "--set (or its own flag): ...")
    with pytest.raises(EmbenchError, match=r"^'temprature' is neither a training option nor an "
                                           r"option of method crop\. Did you mean 'temperature'\?"):
        make_config(method="crop", temprature=0.1)
    # an option of another method says which: `--sigma 2` given to unsup-simcse
    with pytest.raises(EmbenchError, match=r"'sigma' is neither .* method unsup-simcse\. It is an option of method sup-simcse\."):
        make_config(method="unsup-simcse", sigma=2.0)


@pytest.mark.slow
def test_a_transfer_tasks_classifier_search_is_announced_before_it_runs(env, tiny_bert_dir, capsys):
    import embench

    embench.evaluate(str(tiny_bert_dir), tasks=["MRPC"], classifier="prototyping", use_cache=False)
    err = capsys.readouterr().err
    assert "MRPC: training SentEval's classifier on the embeddings (kfold validation)" in err
