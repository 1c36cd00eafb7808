"""Options and messages under faults: numeric options and devices checked, errors printed as plain text,
output folders checked before any encoding, scores printed even when they cannot be saved."""

from __future__ import annotations

import sys

import pytest

from embench.cli import main


def _main(args, capsys, monkeypatch) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["embench", *map(str, args)])
    code = 0
    try:
        main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("text", ["[/bold]", "[red]x[/blue]", "a[b]c", "[/]", "[bold", "../../x"])
def test_an_unknown_task_name_with_brackets_or_a_path_is_printed_as_it_is(env, capsys, monkeypatch, text):
    code, _, err = _main(["run", "--model", "m", "--task", text], capsys, monkeypatch)
    assert code == 2 and f"unknown task {text!r}" in err and "Traceback" not in err


def test_a_message_naming_line_100_is_printed_without_an_emoji(env, capsys, monkeypatch):
    """rich read ':100:' as an emoji code: "STS.gs.headlines.txt:100: gold score ..." printed as "...txt💯 gold
    score ...", in errors and in warnings alike (escape() guards brackets, not emoji codes)."""
    from embench.cli import output

    code, _, err = _main(["run", "--model", "m", "--task", "gs.txt:100:"], capsys, monkeypatch)
    assert code == 2 and "unknown task 'gs.txt:100:'" in err and "\U0001f4af" not in err, err
    output.show_warning("a.txt:100: line skipped", UserWarning, output.__file__, 1)  # one of embench's own warnings
    err = capsys.readouterr().err
    assert "warning: a.txt:100: line skipped" in err and "\U0001f4af" not in err, err


@pytest.mark.parametrize(("args", "message"), [
    (["--max-length", "0"], "--max-length must be at least 1"),
    (["--max-length", "-3"], "--max-length must be at least 1"),
    (["--max-length", "100000"], "--max-length 100000 is more than the model's 512 positions"),
    (["--device", "banana"], "--device 'banana'"),
    (["--device", "cuda:99"], "--device 'cuda:99'"),
    (["--layer", "-9"], "--layer -9 is out of range"),  # -1 is the last layer, as in Python
])
def test_numeric_options_and_devices_are_checked_before_any_work(env, tiny_bert_dir, capsys, monkeypatch, args, message):
    code, _, err = _main(["run", "--model", tiny_bert_dir, "--task", "STS13", "-q", *args], capsys, monkeypatch)
    assert code == 2 and message in " ".join(err.split()) and "Traceback" not in err, err


def _no_encoding(monkeypatch):
    from embench.encoding import engine

    def refuse(*_args, **_kwargs):
        raise AssertionError("encoding started")

    monkeypatch.setattr(engine, "shared_pass", refuse)


@pytest.mark.parametrize(("blocker", "results", "reason"), [
    ("results", "results", "results folder {folder} is a file, not a folder"),
    ("blocker", "blocker/results", "cannot write result records to {folder} (Not a directory)")])
def test_a_results_folder_that_cannot_be_made_stops_the_run_before_any_encoding(env, tiny_bert_dir, capsys, monkeypatch,
                                                                                blocker, results, reason):
    (env / blocker).write_text("a file in the way")
    _no_encoding(monkeypatch)
    code, _, err = _main(["run", "--model", tiny_bert_dir, "--task", "STS13", "-q", "--results-dir", env / results],
                         capsys, monkeypatch)
    err = " ".join(err.split())
    assert code == 2 and reason.format(folder=env / results) in err and "Traceback" not in err, err


@pytest.mark.parametrize(("args", "message"), [
    (["audit", "-m", "M", "-t", "STS16", "--knobs", "truncate-dim", "--figures", "{file}"], "--figures {file} is a file"),
    (["analyze", "spectrum", "-m", "M", "-o", "{file}"], "--out {file} is a file"),
    (["grid", "-m", "M", "-t", "STS16", "--executor", "local", "--results", "{file}"], "--results {file} is a file"),
    (["report", "--results-dir", "{env}", "-f", "markdown", "-o", "{file}/x.md"], "--out's folder {file} is a file"),
    (["report", "--results-dir", "{env}", "-f", "markdown", "-o", "{env}"], "--out {env} is a folder"),
])
def test_an_output_folder_that_is_a_file_is_one_error_before_any_work(env, tiny_bert_dir, capsys, monkeypatch, args,
                                                                      message):
    """Not a traceback once the work is done (an audit's table was lost so)."""
    (env / "afile").write_text("a file in the way")
    _no_encoding(monkeypatch)
    fill = {"file": str(env / "afile"), "env": str(env)}
    code, out, err = _main([str(tiny_bert_dir) if a == "M" else a.format(**fill) for a in args], capsys, monkeypatch)
    err = " ".join(err.split())
    assert code == 2 and message.format(**fill) in err and "Traceback" not in err, err


def test_analyze_refuses_unreadable_layers_before_loading_anything(env, capsys, monkeypatch):
    code, out, err = _main(["analyze", "layers", "-m", "no-such-model", "--layers", "a,b", "-o", env / "out"], capsys,
                           monkeypatch)
    err = " ".join(err.split())
    assert code == 2 and "--layers 'a,b': give layer numbers separated by commas" in err and "no-such-model" not in err


def test_analyze_refuses_k_0_before_loading_anything(env, capsys, monkeypatch):
    code, out, err = _main(["analyze", "knn", "-m", "no-such-model", "--k", "0", "-o", env / "out"], capsys, monkeypatch)
    assert code == 2 and "--k" in out + err and "Traceback" not in out + err and not (env / "out").exists()


@pytest.mark.slow
def test_scores_are_printed_even_when_saving_fails_with_the_reason(env, tiny_bert_dir, capsys, monkeypatch):
    from embench.evaluation.results import ResultStore

    def full(self, record, items=None):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ResultStore, "save", full)
    code, out, err = _main(["run", "--model", tiny_bert_dir, "--task", "STS13", "--format", "csv", "-q"], capsys, monkeypatch)
    assert "STS13" in out.splitlines()[0] and len(out.splitlines()) == 2  # the table is there
    assert "No space left on device" in err and "Traceback" not in err
    assert code == 1
