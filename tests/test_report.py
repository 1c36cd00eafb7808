"""`embench report`: paper tables (ranks with ties and lower-is-better, protocols never mixed silently,
corrupt records named), LaTeX that pdflatex compiles, and an HTML page a real browser shows."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from embench.cli import main
from embench.cli.app import app
from embench.core.errors import EmbenchError
from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.results import Record, ResultStore, record_key
from embench.evaluation.scan import scan_results
from embench.report.paper import PaperTable, ProtocolMixError, paper_tables
from embench.report.paper_render import to_html, to_latex
from embench.report.tables import ranks
from embench.tasks.report_tables import report_tables

ENCODER = {"fingerprint": "f0", "pooling": "mean", "layer": 6, "max_length": 256, "dtype": "fp32", "normalize": True,
           "lowercase": False, "prompt": ""}


def record(model: str, task: str, score: float, kind: str = "sts", display: str | None = None, **protocol) -> Record:
    proto = {**EvalProtocol().to_dict(), **protocol}
    enc = {**ENCODER, "fingerprint": model}
    return Record(task=task, display=display or task, kind=kind, model=model, main_score=score, scores={}, protocol=proto,
                  encoder=enc, key=record_key(task, enc, proto))


def store(tmp_path: Path, records: list[Record]) -> Path:
    s = ResultStore(tmp_path / "results")
    for r in records:
        s.save(r)
    return s.root


# --- ranks: hand-computed ---------------------------------------------------------------------------

def test_ties_share_bold_and_the_next_value_is_underlined():
    frame = pd.DataFrame({"A": [0.8203, 0.8203, 0.70, 0.75]})  # 82.03 twice, then 75.00 second, 70.00 unmarked
    assert ranks(frame, ["A"]) == {(0, "A"): 1, (1, "A"): 1, (3, "A"): 2}


def test_values_equal_as_printed_tie():
    frame = pd.DataFrame({"A": [0.82031, 0.82034, 0.5]})  # both print as 82.03
    assert ranks(frame, ["A"]) == {(0, "A"): 1, (1, "A"): 1, (2, "A"): 2}


def test_lower_is_better_marks_the_smallest():
    frame = pd.DataFrame({"loss": [0.30, 0.10, 0.20, 0.10], "acc": [0.30, 0.10, 0.20, 0.10]})
    got = ranks(frame, ["loss", "acc"], lower={"loss"})
    assert {k: v for k, v in got.items() if k[1] == "loss"} == {(1, "loss"): 1, (3, "loss"): 1, (2, "loss"): 2}
    assert {k: v for k, v in got.items() if k[1] == "acc"} == {(0, "acc"): 1, (2, "acc"): 2}


def test_latex_and_html_put_the_marks_on_the_right_cells():
    frame = pd.DataFrame({"STS12": [0.70, 0.72, 0.72], "err": [0.05, 0.02, 0.03]}, index=pd.Index(["a_1", "b", "c"], name="Model"))
    table = PaperTable("sts", frame, {"aggregation": "all"}, caption="Cap", lower_is_better=frozenset({"err"}))
    rows = {line.split(" & ")[0]: line for line in to_latex(table).splitlines() if " & " in line}
    assert rows["a\\_1"] == "a\\_1 & \\underline{70.00} & 5.00 \\\\"  # the next distinct value after a tie is second
    assert rows["b"] == "b & \\textbf{72.00} & \\textbf{2.00} \\\\"
    assert rows["c"] == "c & \\textbf{72.00} & \\underline{3.00} \\\\"
    assert rows["Model"].startswith("Model & STS12 & err")
    html = to_html(table)
    bold = re.search(r"\{\s*font-weight: bold;", html)
    assert bold and "row1_col0" in html[: bold.start()] and "row1_col1" in html[: bold.start()]


# --- tables from records ----------------------------------------------------------------------------

def test_avg_is_recomputed_and_empty_when_a_task_is_missing():
    recs = [record("m1", "STS12", 0.7), record("m1", "STS13", 0.8), record("m2", "STS12", 0.6)]
    (t,) = paper_tables(recs, names={"m1": "Model One"})
    assert t.frame.loc["Model One", "Avg."] == pytest.approx(0.75)
    assert pd.isna(t.frame.loc["m2", "Avg."])


def test_different_protocols_are_an_error_naming_the_axis_or_split_on_request():
    recs = [record("m1", "STS12", 0.7), record("m2", "STS12", 0.6, aggregation="wmean")]
    with pytest.raises(ProtocolMixError, match=r"(?s)aggregation.*--split"):
        paper_tables(recs)
    tables = paper_tables(recs, split="tables")
    assert [t.protocol["aggregation"] for t in tables] == ["all", "wmean"]
    assert all("aggregation=" in t.note() for t in tables)
    (rows,) = paper_tables(recs, split="rows")  # SimCSE Table B.2's layout: the differing axis in the row name
    assert list(rows.frame.index) == ["m1 (aggregation=all)", "m2 (aggregation=wmean)"] and "aggregation" not in rows.protocol


def test_two_models_of_one_name_in_one_folder_are_two_rows_named_by_fingerprint(tmp_path):
    """Two folders both called tinybert, run into one results folder: `results show` gave a row per fingerprint, but
    report merged them into one row and failed ("two records of tinybert on STS-B ... disagree: give one results
    folder", though one was given). Rows now split by the fingerprint as by any other setting of the identity."""
    one, other = record("tinybert", "STSBenchmark", 0.3259), record("tinybert", "STSBenchmark", 0.3209)
    other.encoder = {**other.encoder, "fingerprint": "f-seed-1"}
    other.key = record_key(other.task, other.encoder, other.protocol)
    (t,), _ = report_tables([store(tmp_path, [one, other])])
    assert t.frame["STSBenchmark"].to_dict() == {"tinybert (fingerprint=tinybert)": 0.3259,
                                                 "tinybert (fingerprint=f-seed-1)": 0.3209}


def test_one_name_given_to_two_models_is_refused_naming_both():
    """--name A=Ours --name B=Ours made one row of both models' cells, its Avg. across the two models."""
    recs = [record("a", "STSBenchmark", 0.3209), record("b", "SICKRelatedness", 0.4212)]
    with pytest.raises(EmbenchError, match=r"--name gives 2 models the row label 'Ours' \(a, b\); give each model its own"):
        paper_tables(recs, names={"a": "Ours", "b": "Ours"})
    assert list(paper_tables(recs, names={"a": "Ours", "b": "Theirs"})[0].frame.index) == ["Ours", "Theirs"]


def test_an_axis_a_task_ignores_does_not_split_it():
    recs = [record("m1", "STS12", 0.7), record("m2", "STS12", 0.6, pair_features="senteval-code")]
    (t,) = paper_tables(recs)
    assert list(t.frame.index) == ["m1", "m2"]


def test_a_corrupt_record_is_named_and_the_rest_reported(tmp_path):
    root = store(tmp_path, [record("m1", "STS12", 0.7), record("m2", "STS12", 0.6)])
    bad = next((root / "m2").glob("*.json"))
    bad.write_text("{ not json")
    recs, problems = scan_results([root])
    assert [r.model for r in recs] == ["m1"]
    assert problems[0][0] == bad and "JSONDecodeError" in problems[0][1]
    result = CliRunner().invoke(app, ["report", "--results", str(root), "--format", "markdown"])
    assert result.exit_code == 0, result.output
    assert "m1" in result.stdout and "70.00" in result.stdout and bad.name in result.stderr.replace("\n", "")


def test_mixed_protocols_from_the_cli_name_the_axis(tmp_path, capsys, monkeypatch):
    root = store(tmp_path, [record("m1", "STS12", 0.7), record("m2", "STS12", 0.6, correlation="pearson")])
    monkeypatch.setattr(sys, "argv", ["embench", "report", "--results", str(root)])
    with pytest.raises(SystemExit) as exit_:
        main()
    err = " ".join(capsys.readouterr().err.split())
    assert exit_.value.code == 2 and "differ in correlation" in err and "--split" in err and "Traceback" not in err
    split = CliRunner().invoke(app, ["report", "--results", str(root), "--split", "tables", "-f", "csv"])
    assert split.exit_code == 0 and split.stdout.splitlines()[0] == "Model,kind,correlation,STS12"  # one CSV of both tables
    assert split.stdout.splitlines()[1:] == ["m2,sts,pearson,60.00", "m1,sts,spearman,70.00"]


def test_a_model_not_stored_names_what_is(tmp_path):
    root = store(tmp_path, [record("m1", "STS12", 0.7)])
    with pytest.raises(EmbenchError, match="no stored results for model.*stored: m1"):
        report_tables([root], models=["m9"])


def test_a_name_for_a_model_with_no_record_is_said_from_the_python_api(tmp_path):
    root = store(tmp_path, [record("m1", "STS12", 0.7)])
    with pytest.warns(UserWarning, match=r"no record has the model\(s\) 'modle-1'.*models found: m1"):
        tables, _ = report_tables([root], names={"modle-1": "Model one"})
    assert list(tables[0].frame.index) == ["m1"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report_tables([root], names={"m1": "Model one"})  # used: nothing said


def test_a_lower_is_better_column_that_is_in_no_table_is_named_with_the_nearest(tmp_path):
    root = store(tmp_path, [record("m1", "STS12", 0.7), record("m1", "STS13", 0.6)])
    tables, _ = report_tables([root], lower_is_better=["STS13"])
    assert tables[0].lower_is_better == frozenset({"STS13"})
    with pytest.raises(EmbenchError, match=r"unknown column of lower_is_better='STS31'. Did you mean 'STS13'"):
        report_tables([root], lower_is_better=["STS31"])


def test_a_figure_without_its_analysis_output_says_which_command_makes_it(tmp_path):
    from embench.report.figures import compose

    (tmp_path / "a").mkdir()
    pd.DataFrame({"model": ["m1"], "index": [1], "singular_value": [1.0], "normalised": [1.0]}).to_csv(tmp_path / "a" / "spectrum.csv")
    with pytest.raises(EmbenchError, match=r"no spectrum.csv for model m2 .*embench analyze spectrum -m m2"):
        compose("spectrum", [tmp_path / "a"], tmp_path / "out", models=["m1", "m2"])


def test_an_unknown_figure_is_one_error_line_naming_the_nearest_and_the_help_lists_every_figure(tmp_path, capsys,
                                                                                                 monkeypatch):
    from embench.report.figures import COMPOSERS

    (tmp_path / "a").mkdir()
    pd.DataFrame({"model": ["m1"], "index": [1], "singular_value": [1.0], "normalised": [1.0]}).to_csv(tmp_path / "a" / "spectrum.csv")
    monkeypatch.setattr(sys, "argv", ["embench", "report", "-a", str(tmp_path / "a"), "-o", str(tmp_path / "r.html"),
                                      "-f", "html", "--figure", "spectrum", "--figure", "spectrm-x"])
    with pytest.raises(SystemExit) as exit_:
        main()
    err = " ".join(capsys.readouterr().err.split())
    assert exit_.value.code == 2 and "Traceback" not in err
    assert "error: unknown figure 'spectrm-x'. Did you mean 'spectrum'?" in err
    assert not (tmp_path / "r-figures").exists()  # nothing drawn before the bad name was found
    shown = " ".join(CliRunner().invoke(app, ["report", "--help"], terminal_width=400).output.split())
    assert [n for n in COMPOSERS if n not in shown] == []

def test_a_figure_asked_for_without_analysis_outputs_is_an_error_not_left_out(tmp_path):
    """``--figure`` draws from ``--analysis`` folders: without one it would draw nothing and exit 0."""
    results = tmp_path / "results"
    results.mkdir()
    r = CliRunner().invoke(app, ["report", "--results", str(results), "-f", "markdown", "--figure", "spectrum"])
    assert r.exit_code == 2 and "--figure draws from analysis outputs; give --analysis DIR" in " ".join(r.output.split())
    r = CliRunner().invoke(app, ["report", "--results", str(results), "-f", "markdown", "--figure", "spectrm"])
    assert r.exit_code == 1 and "unknown figure 'spectrm'. Did you mean 'spectrum'?" in str(r.exception)



@pytest.mark.slow
def test_bellm_figures_draw_each_model_in_its_report_colour(tmp_path, monkeypatch):
    from matplotlib.colors import to_rgba

    from embench.report import figures

    a = tmp_path / "a"
    a.mkdir()
    pd.DataFrame({"model": ["llm"] * 3 + ["enc"] * 3, "layers_kept": [1, 2, 3] * 2,
                  "stsb_spearman": [0.1, 0.3, 0.2, 0.5, 0.6, 0.7]}).to_csv(a / "layer_removal.csv", index=False)
    pd.DataFrame({"model": ["llm"] * 3 + ["enc"] * 3, "spearman": [0.9, 0.8, 0.7, 0.2, 0.1, 0.3]}).to_csv(a / "token_dependency.csv", index=False)
    colours = {"enc": (1.0, 0.0, 0.0), "llm": (0.0, 0.0, 1.0)}
    drawn = {}

    def keep(fig, out, name):  # look at the axes instead of the file
        drawn[name] = fig.axes[0]
        return [Path(out) / f"{name}.png"]

    monkeypatch.setattr(figures, "save", keep)
    figures.compose("layer-removal", [a], tmp_path / "out", colours=colours)
    figures.compose("token-dependency", [a], tmp_path / "out", colours=colours)
    lines = {ln.get_label(): ln for ln in drawn["layer_removal"].get_lines()}
    assert list(lines["llm"].get_ydata()) == [10.0, 30.0, 20.0] and to_rgba(lines["enc"].get_color()) == to_rgba(colours["enc"])
    boxes = drawn["token_dependency"].patches
    assert [to_rgba(p.get_facecolor()) for p in boxes] == [to_rgba(colours["llm"]), to_rgba(colours["enc"])]
    assert [t.get_text() for t in drawn["token_dependency"].get_xticklabels()] == ["mean 0.80", "mean 0.20"]


@pytest.mark.slow
def test_training_figures_read_the_eval_columns_embench_train_logs(tmp_path, monkeypatch):
    from embench.report import figures

    run = tmp_path / "runs" / "crop"
    run.mkdir(parents=True)
    log = [{"step": 0, "eval/STSBenchmark-dev": 0.80, "eval/knn:trec": 0.42, "best": True},
           {"step": 10, "loss": 0.9, "lr": 1e-5}, {"step": 20, "loss": 0.5, "lr": 5e-6},
           {"step": 20, "eval/STSBenchmark-dev": 0.82, "eval/knn:trec": 0.40, "best": True}]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log))
    drawn = {}
    monkeypatch.setattr(figures, "save", lambda fig, out, name: drawn.setdefault(name, fig.axes[0]) and [])
    for name in ("training-loss", "training-eval", "training-knn"):
        figures.compose(name, [tmp_path / "runs"], tmp_path / "out")
    points = {n: (list(ax.get_lines()[0].get_xdata()), list(ax.get_lines()[0].get_ydata()), ax.get_ylabel()) for n, ax in drawn.items()}
    assert points == {"training_loss": ([10, 20], [0.9, 0.5], "loss"),  # scores x100, as the tables show them
                      "training_eval": ([0, 20], [80.0, 82.0], "STSBenchmark-dev (x100)"),
                      "training_knn": ([0, 20], [42.0, 40.0], "knn:trec (x100)")}
    assert drawn["training_knn"].get_lines()[0].get_label() == "crop"  # a run folder's own log is named after the folder
    (run / "metrics.jsonl").write_text(json.dumps({"step": 10, "loss": 0.9}) + "\n")
    with pytest.raises(EmbenchError, match="--eval-analysis knn:DATASET"):
        figures.compose("training-knn", [tmp_path / "runs"], tmp_path / "out")


# --- LaTeX through pdflatex, HTML through chromium --------------------------------------------------



def _dark_fraction(png: Path) -> float:
    import matplotlib.image as mpimg

    img = mpimg.imread(png)[..., :3]
    return float((img.mean(axis=-1) < 0.5).mean())


@pytest.mark.slow
def test_latex_compiles_and_the_table_is_on_the_page(tmp_path, report_tools):
    root = store(tmp_path, [record("mA", t, s) for t, s in (("STS12", 0.7237), ("STS13", 0.8063))] +
                 [record("m2", t, s) for t, s in (("STS12", 0.60), ("STS13", 0.85))] +
                 [record("m3", t, s) for t, s in (("STS12", 0.50), ("STS13", 0.55))])
    tex = tmp_path / "table.tex"
    # a label starting with "[" (read as \\'s optional argument: "Missing number") and characters that print as other
    # glyphs under LaTeX's default font encoding
    result = CliRunner().invoke(app, ["report", "--results", str(root), "--standalone", "--name", "m2=Second",
                                      "--name", "m3=[ours] p|q <x>", "-o", str(tex)])
    assert result.exit_code == 0, result.output
    subprocess.run([report_tools["pdflatex"], "-interaction=nonstopmode", "-halt-on-error", tex.name], cwd=tmp_path,
                   check=True, capture_output=True, timeout=120)
    subprocess.run([report_tools["pdftoppm"], "-png", "-r", "60", "-singlefile", "table.pdf", "page"], cwd=tmp_path, check=True, timeout=60)
    assert 0.001 < _dark_fraction(tmp_path / "page.png") < 0.2  # ink on the page, not a black page
    text = subprocess.run([report_tools["pdftotext"], "-layout", "table.pdf", "-"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert re.search(r"Model\s+STS12\s+STS13\s+Avg\.", text)
    assert re.search(r"mA\s+72\.37\s+80\.63\s+76\.50", text) and re.search(r"Second\s+60\.00\s+85\.00\s+72\.50", text)
    assert re.search(r"\[ours\] p\|q <x>\s+50\.00\s+55\.00\s+52\.50", text)
    fonts = subprocess.run([report_tools["pdffonts"], "table.pdf"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert "CMBX" in fonts  # the bold best cells


PROBE = ("<script>document.title = JSON.stringify({images: [...document.images].map(i => i.complete && i.naturalWidth > 0),"
         " requests: performance.getEntriesByType('resource').map(e => e.name)});</script></body>")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND"]


@pytest.mark.slow
def test_html_page_opens_in_chromium_with_every_image_and_no_request(tmp_path, report_tools):
    root = store(tmp_path, [record("m1", "STS12", 0.7), record("m2", "STS12", 0.6)])
    analysis = tmp_path / "analysis"
    analysis.mkdir()
    pd.DataFrame({"model": ["m1"] * 3 + ["m2"] * 3, "index": [1, 2, 3] * 2,
                  "normalised": [1, 0.5, 0.2, 1, 0.1, 0.01]}).to_csv(analysis / "spectrum.csv", index=False)
    pd.DataFrame({"model": ["m1", "m2"], "step": [0, 0], "alignment": [0.25, 0.04],
                  "uniformity": [-3.8, -0.3]}).to_csv(analysis / "alignment_uniformity.csv", index=False)
    page = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["report", "--results-dir", str(root), "-a", str(analysis), "-f", "html", "-o", str(page)])
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert all(src.startswith("data:image/png;base64,") for src in re.findall(r'src="([^"]*)"', text))
    assert len(re.findall(r"<img ", text)) == 2 and "href=" not in text
    assert (tmp_path / "report-figures" / "spectrum.pdf").is_file()
    browser = report_tools["chromium"]
    probe = tmp_path / "probe.html"  # the page's own CSP forbids scripts: the probe is a copy without it
    probe.write_text(re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text).replace("</body>", PROBE))
    dom = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'u1'}", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    state = json.loads(re.search(r"<title>(.*?)</title>", dom).group(1).replace("&quot;", '"'))
    assert state == {"images": [True, True], "requests": []}
    shot = tmp_path / "shot.png"
    subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'u2'}", f"--screenshot={shot}", "--window-size=1200,1400",
                    page.as_uri()], capture_output=True, timeout=120)
    assert 0.002 < _dark_fraction(shot) < 0.3


def test_a_checkpoint_series_is_placed_at_its_training_steps():
    from embench.report.panels import training_step

    frame = pd.DataFrame({"checkpoint": ["", "step-000010", "checkpoint-500", "best"], "step": [0, 1, 2, 3]})
    assert training_step(frame).tolist() == [0, 10, 500, 3]  # "best" has no number: the analysis' own index


def test_an_image_is_checked_before_anything_is_drawn_and_only_html_takes_it(tmp_path):
    import matplotlib.image as mpimg
    import numpy as np

    root = store(tmp_path, [record("m1", "STS12", 0.7)])
    missing = CliRunner().invoke(app, ["report", "--results", str(root), "-f", "html", "--image", str(tmp_path / "no.png")])
    assert missing.exit_code == 2 and "does not exist" in " ".join(missing.output.split())
    (tmp_path / "text.png").write_text("not a png\n")  # was embedded as a broken image, without a word
    fake = CliRunner().invoke(app, ["report", "--results", str(root), "-f", "html", "--image", str(tmp_path / "text.png")])
    assert fake.exit_code == 2 and "is not a PNG file" in " ".join(fake.output.split())
    png = tmp_path / "fig.png"
    mpimg.imsave(png, np.zeros((4, 4, 3)))
    latex = CliRunner().invoke(app, ["report", "--results", str(root), "-f", "latex", "--image", str(png)])
    assert latex.exit_code == 2 and "give --format html" in " ".join(latex.output.split())
    page = CliRunner().invoke(app, ["report", "--results", str(root), "-f", "html", "--image", str(png)])
    assert page.exit_code == 0 and "data:image/png;base64," in page.stdout
    head, body = page.stdout.split("<body>")
    assert "<style" not in body and head.count("<style") == 1  # pandas' table style moves to the head (HTML allows it
    # there only); this one-row table has no marks, so pandas' block is empty and left out


@pytest.mark.slow
def test_options_of_another_format_are_refused(tmp_path):
    """``report -f csv --standalone --title X --caption Y`` exited 0 and ignored all three, as ``--image`` with a format
    other than html is refused: --standalone is LaTeX's, --title HTML's, and CSV has no caption."""
    root = store(tmp_path, [record("m1", "STS12", 0.7)])
    for fmt, option, wanted in (("csv", ["--standalone"], "give --format latex (not csv)"),
                                ("html", ["--standalone"], "give --format latex (not html)"),
                                ("latex", ["--title", "X"], "give --format html (not latex)"),
                                ("csv", ["--caption", "Y"], "CSV has no caption")):
        out = CliRunner().invoke(app, ["report", "--results", str(root), "-f", fmt, *option])
        assert out.exit_code == 2 and wanted in " ".join(out.output.split()), (fmt, option, out.output)
    for fmt, option in (("latex", ["--standalone", "--caption", "Y"]), ("html", ["--title", "X", "--caption", "Y"]),
                        ("markdown", ["--caption", "Y"])):
        out = CliRunner().invoke(app, ["report", "--results", str(root), "-f", fmt, *option])
        assert out.exit_code == 0 and "Y" in out.stdout, (fmt, option, out.output)
    assert "<title>X</title>" in CliRunner().invoke(app, ["report", "--results", str(root), "-f", "html", "--title", "X"]).stdout


def test_a_page_keeps_each_table_style_once_and_no_empty_one():
    """pandas' Styler writes a ``<style>`` block before each table, empty where nothing is marked: a page of eight
    tables opened with eight blocks, most of them empty."""
    from embench.report.html_page import page

    marked = '<style type="text/css">\n#T_a td { font-weight: bold; }\n</style>\n<table id="T_a"></table>'
    empty = '<style type="text/css">\n</style>\n<table id="T_b"></table>'
    head, body = page("t", [("one", marked), ("two", empty), ("three", marked)]).split("<body>")
    assert head.count("<style") == 2 and head.count("font-weight: bold") == 1  # the page's own, then the table's
    assert "<style" not in body and body.count("<table") == 3


def test_report_reads_the_default_results_folder_as_results_show_does(tmp_path, monkeypatch):
    """``EMBENCH_RESULTS=DIR embench report`` was "give --results DIR" (exit 2), where ``results show | export`` and
    ``mteb blocks | export`` read $EMBENCH_RESULTS, then ./results."""
    root = store(tmp_path, [record("m1", "STS12", 0.7)])
    monkeypatch.setenv("EMBENCH_RESULTS", str(root))
    out = CliRunner().invoke(app, ["report", "-f", "csv"])
    assert out.exit_code == 0 and out.stdout.splitlines() == ["Model,STS12", "m1,70.00"], out.output
    monkeypatch.delenv("EMBENCH_RESULTS")
    monkeypatch.chdir(tmp_path)  # ./results
    assert CliRunner().invoke(app, ["report", "-f", "csv"]).stdout == out.stdout
    shown = " ".join(CliRunner().invoke(app, ["report", "--help"], terminal_width=400).output.split())
    assert "$EMBENCH_RESULTS, then ./results" in shown


@pytest.mark.slow  # results show and mteb blocks import the API (torch)
def test_nothing_to_show_is_exit_1_alike_and_a_misspelt_task_is_an_unknown_name(tmp_path):
    """Nothing matching ``--model`` was exit 1 in ``results show`` and exit 2 in ``report``, a missing results folder
    exit 1 in ``results show`` and exit 2 in ``report`` and ``mteb blocks``, each worded its own way; and
    ``report -t STS99`` said "no stored results for task(s) STS99" where every other command names the nearest tasks.
    A task file's task is still taken by its stored name."""
    from embench.core.errors import UnknownNameError

    root = store(tmp_path, [record("m1", "STS12", 0.7), record("m1", "my-sts", 0.5)])  # my-sts: a task file's
    (tmp_path / "empty").mkdir()

    def said(*args: str) -> tuple[int, str]:
        out = CliRunner().invoke(app, list(args))
        return out.exit_code, " ".join(out.output.split())

    for command in (["results", "show"], ["report", "-f", "csv"]):
        assert said(*command, "--results-dir", str(root), "-m", "m9") == (
            1, f"no stored result in {root} matches --model m9; it holds 2 record(s) of model(s) m1 on task(s) STS12, my-sts")
        assert said(*command, "--results-dir", str(tmp_path / "empty")) == (1, f"no stored results in {tmp_path / 'empty'}")
        typo = CliRunner().invoke(app, [*command, "--results-dir", str(root), "-t", "STS99"])
        assert isinstance(typo.exception, UnknownNameError) and "Did you mean 'STS16'" in str(typo.exception)  # exit 2
    for command in (["results", "show"], ["report", "-f", "csv"], ["mteb", "blocks"]):
        assert said(*command, "--results-dir", str(tmp_path / "nowhere")) == (
            1, f"no stored results in {tmp_path / 'nowhere'} (no such folder)")
    assert said("report", "-f", "csv", "--results-dir", str(root), "-t", "STS13") == (
        1, f"no stored result in {root} matches --task STS13; it holds 2 record(s) of model(s) m1 on task(s) STS12, my-sts")
    assert CliRunner().invoke(app, ["report", "-f", "csv", "--results", str(root), "-t", "my-sts"]).stdout.splitlines() == [
        "Model,my-sts", "m1,50.00"]
    assert isinstance(CliRunner().invoke(app, ["report", "--results", str(root), "-t", "my-stss"]).exception, UnknownNameError)
