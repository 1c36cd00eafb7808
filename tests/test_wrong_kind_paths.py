"""A path of the wrong kind (a folder given for a file, a file for a folder) is said as such, not as missing."""

from __future__ import annotations

import pytest

from embench.core.errors import EmbenchError
from embench.core.paths import not_there


def test_not_there_tells_a_missing_path_from_one_of_the_other_kind(tmp_path):
    (tmp_path / "f.txt").write_text("x")
    assert not_there(tmp_path / "nope") == not_there(tmp_path / "nope", "folder") == "does not exist"
    assert not_there(tmp_path) == "is a folder, not a file"
    assert not_there(tmp_path / "f.txt", "folder") == "is a file, not a folder"


def test_each_command_input_names_the_wrong_kind(tmp_path):
    from embench.audit.published_table import check_table
    from embench.data.root import DataRoot
    from embench.evaluation.scan import scan_results
    from embench.report.figures import read_output
    from embench.tasks.task_file.declaration import read_declaration
    from embench.train.config import read_config_file

    a_file = tmp_path / "a.txt"
    a_file.write_text("x")
    cases = [
        (lambda: read_declaration(tmp_path), "task file .* is a folder, not a file"),
        (lambda: check_table(tmp_path), "table file .* is a folder, not a file"),
        (lambda: scan_results([a_file]), "results folder .*a.txt is a file, not a folder"),
        (lambda: read_output([a_file], "x.csv"), "analysis folder .*a.txt is a file, not a folder"),
        (lambda: DataRoot(a_file).require(), "data root .*a.txt is a file, not a folder"),
        (lambda: read_config_file(tmp_path), "--config .* is a folder, not a file"),
        (lambda: read_config_file(tmp_path / "none.yaml"), "--config .*none.yaml does not exist"),
    ]
    for call, message in cases:
        with pytest.raises(EmbenchError, match=message):
            call()
    (tmp_path / "task.yaml").write_text("name: t\nkind: pairs\nfiles: {test: .}\n")
    with pytest.raises(EmbenchError, match=r"task.yaml:3: files.test: data file .* is a folder, not a file"):
        read_declaration(tmp_path / "task.yaml")


def test_a_symlink_loop_is_one_error_naming_it_wherever_a_path_is_followed(tmp_path):
    """pathlib's resolve() raises RuntimeError ("Symlink loop from ...") on a link to itself: a data root, a data file,
    a manifest entry's destination or a task file that looped ended in a traceback, and a looping data file read as
    "missing data file"."""
    from embench.core.paths import within
    from embench.data.root import DataRoot, resolve_data_root
    from embench.tasks.task_file import load_task_file
    from embench.tasks.task_file.declaration import read_declaration

    for name in ("loop", "t.yaml"):
        (tmp_path / name).symlink_to(tmp_path / name)
    (tmp_path / "pairs.yaml").write_text("name: x\nkind: pairs\nfiles: {test: loop}\nscore_range: [0, 5]\n")
    loop, root = tmp_path / "loop", DataRoot(tmp_path)
    cases = [
        (lambda: resolve_data_root(loop), "loop"),
        (lambda: root.find(loop), "loop"),
        (lambda: root.relative(loop), "loop"),
        (lambda: within(tmp_path, "loop", "manifest entry"), "loop"),
        (lambda: read_declaration(tmp_path / "t.yaml"), "t.yaml"),
        (lambda: load_task_file(tmp_path / "t.yaml"), "t.yaml"),
        (lambda: read_declaration(tmp_path / "pairs.yaml"), r"pairs.yaml:3: files.test: data file .*loop"),
    ]
    for call, named in cases:
        with pytest.raises(EmbenchError, match=rf"{named} is a symlink loop \(a link that leads back to itself\)"):
            call()
