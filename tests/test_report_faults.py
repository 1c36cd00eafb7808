"""`embench report` and `results show` as their help and the README say them: -t takes run's task aliases, -m and
--name match and label figures as they do tables (./tiny-bert is the tiny-bert an analysis wrote), rows follow -m,
a figures folder that is a file or an analysis CSV without a column is one line, and CSV and JSON say what the table
says (the shared settings, each column's metric)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest
from test_report import record, store  # one record builder and store for the report tests
from typer.testing import CliRunner

import embench
from embench.cli.app import app
from embench.core.errors import EmbenchError
from embench.report import style


def spectrum(folder: Path, models: list[str], columns: tuple[str, ...] = ("index", "normalised")) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"model": m, "index": i, "singular_value": 1.0 / i, "normalised": 1.0 / i} for m in models for i in (1, 2, 3)]
    pd.DataFrame(rows)[["model", *columns]].to_csv(folder / "spectrum.csv", index=False)
    return folder


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture()
def legends(monkeypatch):
    """The legend texts of each figure the report saves, in order."""
    from embench.report import figures

    found: list[list[str]] = []
    real = style.save

    def save(fig, out, stem):
        found.append([t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()])
        return real(fig, out, stem)

    monkeypatch.setattr(figures, "save", save)  # the name figures.py imported
    return found


@pytest.mark.slow  # the task registry's first look-up
def test_a_task_is_asked_for_by_the_aliases_run_takes(tmp_path):
    root = store(tmp_path, [record("m1", "STSBenchmark", 0.8, display="STS-B"), record("m1", "STS12", 0.7)])
    for alias in ("stsb", "STS-B", "sts-b", "STSBenchmark"):
        (table,), _ = embench.report_tables([root], tasks=[alias])
        assert list(table.frame.columns) == ["STS-B"], alias
    r = invoke("report", "--results", str(root), "-t", "stsb", "-t", "sts12", "-f", "csv")
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == "Model,STS-B,STS12,Avg."  # the columns in the order asked


def test_rows_follow_the_models_asked_for_even_when_the_first_lacks_the_first_column(tmp_path):
    root = store(tmp_path, [record("m1", "STS13", 0.6), record("m2", "STS12", 0.7), record("m2", "STS13", 0.8)])
    (table,), _ = embench.report_tables([root], models=["m1", "m2"])
    assert list(table.frame.index) == ["m1", "m2"] and list(table.frame.columns) == ["STS12", "STS13", "Avg."]
    (table,), _ = embench.report_tables([root], models=["m2", "m1"])
    assert list(table.frame.index) == ["m2", "m1"]
    (table,), _ = embench.report_tables([root])  # without -m: as before, by the first column a model has
    assert list(table.frame.index) == ["m2", "m1"]


def test_a_name_given_for_a_path_names_the_stored_last_part_and_a_name_given_twice_is_refused(tmp_path):
    root = store(tmp_path, [record("./tiny-bert", "STS12", 0.7), record("other", "STS12", 0.6)])
    (table,), _ = embench.report_tables([root], names={"tiny-bert": "TinyA"})
    assert list(table.frame.index) == ["TinyA", "other"]
    r = invoke("report", "--results", str(root), "-f", "csv", "--name", "other=A", "--name", "other=B")
    assert r.exit_code == 2 and "other is named twice (A, B); give each model one name" in " ".join(r.output.split())
    assert invoke("report", "--results", str(root), "-f", "csv", "--name", "other=A", "--name", "other=A").exit_code == 0


@pytest.mark.slow  # draws figures (matplotlib)
def test_figures_match_models_as_tables_do_and_legends_show_the_names_given(tmp_path, legends):
    root = store(tmp_path, [record("./tiny-bert", "STS12", 0.7), record("./tiny_bert_2", "STS12", 0.6)])
    an = spectrum(tmp_path / "AN" / "spectrum", ["tiny_bert_2", "tiny-bert"])  # as `analyze -m ./tiny-bert` writes it
    page = tmp_path / "rep" / "r.html"
    page.parent.mkdir()
    for args, legend in ((["-m", "./tiny-bert", "-m", "./tiny_bert_2"], ["tiny-bert", "tiny_bert_2"]),  # no figure was drawn
                         (["-m", "tiny-bert", "-m", "tiny_bert_2", "--name", "tiny-bert=TinyA"], ["TinyA", "tiny_bert_2"]),
                         (["--name", "tiny-bert=TinyA"], ["tiny_bert_2", "TinyA"]),  # the legend ignored --name
                         (["--name", "./tiny-bert=TinyA"], ["tiny_bert_2", "TinyA"])):
        legends.clear()
        r = invoke("report", "--results", str(root), "-a", str(an.parent), "--figure", "spectrum", "-f", "html",
                   "-o", str(page), *args)
        assert r.exit_code == 0, (args, r.output, r.exception)
        assert [t.strip() for t in legends[0]] == legend, args
    assert "TinyA" in page.read_text()  # the table's row too
    from embench.report.figures import compose

    with pytest.raises(EmbenchError, match="--name gives the models tiny_bert_2, tiny-bert the label 'X'"):
        compose("spectrum", [an], tmp_path / "f", names={"tiny-bert": "X", "tiny_bert_2": "X"})


def test_a_figures_folder_that_is_a_file_is_one_line_naming_out(tmp_path):
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / "x-figures").touch()
    an = spectrum(tmp_path / "AN", ["m1"])
    r = invoke("report", "-a", str(an), "-f", "html", "-o", str(tmp_path / "rep" / "x.html"))
    assert isinstance(r.exception, EmbenchError)  # was a FileExistsError traceback
    assert str(r.exception) == (f"--out {tmp_path / 'rep' / 'x.html'}: its figures go to {tmp_path / 'rep' / 'x-figures'}, "
                                "which is a file; move it or give another --out")


@pytest.mark.slow  # matplotlib
def test_saving_a_figure_into_a_file_is_one_error_naming_it(tmp_path):
    from embench.core.atomic import OutputNotWritten

    (tmp_path / "f").touch()
    with style.paper_style():
        fig, _ = style.figure()
        with pytest.raises(OutputNotWritten, match=f"^{tmp_path / 'f'}: could not be written"):
            style.save(fig, tmp_path / "f", "x")


def test_an_analysis_file_without_a_column_a_figure_draws_is_named_with_its_line(tmp_path):
    spectrum(tmp_path / "an4", ["m1"])
    pd.read_csv(tmp_path / "an4" / "spectrum.csv").drop(columns="model").to_csv(tmp_path / "an4" / "spectrum.csv", index=False)
    spectrum(tmp_path / "an5", ["A"], columns=("index",))
    out = str(tmp_path / "a.html")
    r = invoke("report", "-a", str(tmp_path / "an4"), "-f", "html", "-o", out)
    assert isinstance(r.exception, EmbenchError), r.exception  # was KeyError: 'model'
    assert str(r.exception).startswith(f"{tmp_path / 'an4' / 'spectrum.csv'}:1: no column 'model' (its header: index, normalised)")
    r = invoke("report", "-a", str(tmp_path / "an5"), "--figure", "spectrum", "-f", "html", "-o", out)
    assert isinstance(r.exception, EmbenchError), r.exception  # was KeyError: 'normalised'
    assert str(r.exception).startswith(f"{tmp_path / 'an5' / 'spectrum.csv'}:1: no column 'normalised' (its header: model, index); "
                                       "the figure needs model, index, normalised")


def test_an_image_in_the_working_folder_is_captioned_by_its_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("spec.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(16))
    r = invoke("report", "--image", "spec.png", "-f", "html", "-o", "img.html")
    assert r.exit_code == 0, r.output
    text = Path("img.html").read_text()
    assert "spec.png" in text and "/spec.png" not in text


def test_the_html_table_names_its_rows_in_the_corner_as_latex_and_markdown_do(tmp_path):
    root = store(tmp_path, [record("m1", "STS12", 0.7), record("m2", "STS12", 0.6)])
    r = invoke("report", "--results", str(root), "-f", "html")
    assert '<th class="index_name level0" >Model</th>' in r.stdout and "blank level0" not in r.stdout


@pytest.mark.slow  # results show imports the API (torch)
def test_results_show_csv_keeps_the_shared_settings_and_json_says_each_columns_metric(tmp_path):
    root = store(tmp_path, [record("m1", "STS12", 0.7), record("m2", "STS12", 0.6)])
    r = invoke("results", "show", "--results-dir", str(root), "-f", "csv")
    frame = pd.read_csv(io.StringIO(r.stdout))
    scores, notes = frame[frame["table"] == "scores"], frame[frame["table"] == "notes"]["note"].tolist()
    assert scores["model"].tolist() == ["m1", "m2"] and scores["STS12"].tolist() == [70.0, 60.0]
    assert len(notes) == 1 and notes[0].startswith("shared by every row: ") and "correlation=spearman" in notes[0]
    js = json.loads(invoke("results", "show", "--results-dir", str(root), "-f", "json").stdout)
    assert js["metrics"] == {"STS12": "spearman correlation of cosine similarities with the gold scores"}
