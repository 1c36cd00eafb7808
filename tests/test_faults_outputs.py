"""Outputs a user asks for (``report -o``, ``analyze``'s CSVs and figures, ``generate``'s files) are written under a
temporary name and renamed: a full disk (here ``ulimit -f``: the write fails with EFBIG) is one error naming the
file, the previous output stays whole, and no temporary file is left."""

from __future__ import annotations

import errno
import os

import pandas as pd
import pytest
from file_limits import file_size_limit
from typer.testing import CliRunner

from embench.cli import app
from embench.core import atomic
from embench.core.errors import EmbenchError
from embench.evaluation.results import Record, ResultStore, record_key


def _only(folder, name):
    """``name`` is the only file in ``folder``: no temporary file left beside it."""
    return sorted(p.name for p in folder.iterdir()) == [name]


def _store(root):
    enc, proto = {"fingerprint": "f", "pooling": "cls"}, {"aggregation": "all"}
    for task, score in (("STS12", 0.5), ("STS13", 0.6)):
        ResultStore(root).save(Record(task=task, display=task, kind="sts", model="m", main_score=score,
                                      scores={"all": {"spearman": score}}, protocol=proto, encoder=enc,
                                      key=record_key(task, enc, proto)))


@pytest.mark.slow  # the report command's imports
@pytest.mark.parametrize("fmt", ["html", "markdown"])
def test_a_report_that_cannot_be_written_keeps_the_previous_one(tmp_path, fmt):
    _store(tmp_path / "results")
    out = tmp_path / "rep" / "t.md"
    out.parent.mkdir()
    out.write_text("the previous report\n")
    with file_size_limit(100):
        got = CliRunner().invoke(app, ["report", "--results", str(tmp_path / "results"), "-f", fmt, "-o", str(out)])
    assert isinstance(got.exception, atomic.OutputNotWritten), got.output  # main() prints it as one error, status 2
    assert str(got.exception).startswith(f"--out {out}: could not be written (File too large)")
    assert out.read_text() == "the previous report\n" and _only(out.parent, "t.md")
    done = CliRunner().invoke(app, ["report", "--results", str(tmp_path / "results"), "-f", fmt, "-o", str(out)])
    assert done.exit_code == 0 and "STS13" in out.read_text() and _only(out.parent, "t.md")


@pytest.mark.slow  # embench.analysis imports torch
def test_an_analysis_table_that_cannot_be_written_keeps_the_previous_one(tmp_path):
    from embench.analysis.inputs import write_csv

    path = write_csv(pd.DataFrame({"model": ["a"], "x": [1.0]}), tmp_path, "spectrum")
    before = path.read_bytes()
    with file_size_limit(50), pytest.raises(EmbenchError, match=r"spectrum\.csv: could not be written \(File too large\)"):
        write_csv(pd.DataFrame({"model": ["b"] * 100, "x": range(100)}), tmp_path, "spectrum")
    assert path.read_bytes() == before and _only(tmp_path, "spectrum.csv")


@pytest.mark.slow  # matplotlib draws a figure
def test_a_figure_that_cannot_be_written_keeps_the_previous_one(tmp_path):
    from embench.report import style

    fig, _ = style.figure()
    png, pdf = style.save(fig, tmp_path, "f")
    before = png.read_bytes()
    fig, axes = style.figure()
    axes[0][0].plot(range(100))
    with file_size_limit(200), pytest.raises(EmbenchError, match=r"f\.png: could not be written"):
        style.save(fig, tmp_path, "f")
    assert png.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["f.pdf", "f.png"]


@pytest.mark.slow  # embench.generate's imports
def test_a_torn_triplet_file_is_trimmed_whole_or_not_at_all(tmp_path):
    from embench.generate.triplets import HEADER, _existing_keys

    out = tmp_path / "triplets.csv"
    rows = [",".join(HEADER)] + [f"premise {i} {'x' * 40},ent,con,{i},0,0" for i in range(20)]
    text = "\n".join(rows) + "\npremise cut sh"  # a run killed mid-row
    out.write_text(text)
    with file_size_limit(200), pytest.raises(EmbenchError, match=r"--out .*triplets\.csv: could not be written"):
        _existing_keys(out, lambda message: None)
    assert out.read_text() == text and _only(tmp_path, "triplets.csv")  # all 20 good rows still there


def test_atomic_path_renames_a_whole_file_and_removes_a_failed_one(tmp_path):
    path = tmp_path / "a.csv"
    with atomic.atomic_path(path) as tmp:
        tmp.write_text("new")
    assert path.read_text() == "new"
    with pytest.raises(OSError), atomic.atomic_path(path) as tmp:
        tmp.write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert path.read_text() == "new" and _only(tmp_path, "a.csv")


def test_a_read_only_file_system_is_said_as_such_not_as_a_permission(tmp_path, monkeypatch):
    from embench.core.paths import check_folder_option

    class ReadOnly:
        f_flag = os.ST_RDONLY

    monkeypatch.setattr(os, "access", lambda path, mode: False)
    monkeypatch.setattr(os, "statvfs", lambda path: ReadOnly())
    with pytest.raises(EmbenchError, match=r"--out .*new: cannot write there \(Read-only file system\)"):
        check_folder_option(tmp_path / "new", "--out")


LAYERS = ("model,layer,pooling,normalized,stsb_spearman\n"
          "tiny,0,mean,False,0.40482395187959863\n"
          "tiny,1,mean,False,0.40507211883014\n")


@pytest.mark.parametrize(("text", "message"), [
    ("", r"layers\.csv: it is empty"),
    (LAYERS[:-9], r"layers\.csv:3: its last row is cut short"),  # a kill mid-row
    (LAYERS + "tiny,2,mean\n", r"layers\.csv:4: 3 fields where the header has 5"),
    (LAYERS.replace("0.40507211883014", "0.405x"), r"layers\.csv:3: column 'stsb_spearman' holds numbers, but this row has '0\.405x'"),
])
def test_a_damaged_analysis_table_is_an_error_naming_the_file(tmp_path, text, message):
    from embench.report.figures import read_output

    (tmp_path / "an").mkdir()
    (tmp_path / "an" / "layers.csv").write_text(text)
    with pytest.raises(EmbenchError, match=message):
        read_output([tmp_path / "an"], "layers.csv")


def test_a_whole_analysis_table_and_log_are_read_as_written(tmp_path):
    from embench.report.figures import read_output

    (tmp_path / "layers.csv").write_text(LAYERS)
    frame = read_output([tmp_path], "layers.csv")
    assert list(frame["stsb_spearman"].round(3)) == [0.405, 0.405] and frame["layer"].dtype.kind == "i"
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metrics.jsonl").write_text('{"step": 1, "loss": 2.0}\n{"step": 2, "loss": 1.5}\n')
    assert list(read_output([tmp_path / "run"], "*metrics.jsonl")["loss"]) == [2.0, 1.5]


def test_a_torn_line_of_a_training_log_is_an_error_naming_it(tmp_path):
    from embench.report.figures import read_output

    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "loss": 2.0}\n{"step": 2, "lo')
    with pytest.raises(EmbenchError, match=r"metrics\.jsonl:2: not a JSON object"):
        read_output([tmp_path], "*metrics.jsonl")
