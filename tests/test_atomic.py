"""One atomic write for every file embench keeps (core/atomic.py): the old file or the whole new one,
never half of one, and no temporary file left behind."""

from __future__ import annotations

import json
import os

import pytest

from embench.core import atomic


def test_a_write_that_fails_half_way_keeps_the_old_file_and_leaves_no_temporary_file(tmp_path):
    path = atomic.write_text(tmp_path / "sub" / "a.txt", "old\n")  # the folder is made
    with pytest.raises(OSError, match="No space"), atomic.atomic_file(path) as fh:
        fh.write(b"half of the new")
        raise OSError(28, "No space left on device")
    assert path.read_text() == "old\n" and [p.name for p in path.parent.iterdir()] == ["a.txt"]


def test_the_temporary_name_is_hidden_unique_and_in_the_same_folder(tmp_path):
    names = {atomic.temporary_name(tmp_path / "r.json") for _ in range(50)}
    assert len(names) == 50
    assert all(n.parent == tmp_path and n.name.startswith(".r.json.") and n.name.endswith(".tmp") for n in names)


def test_json_is_the_json_module_text_with_a_final_newline(tmp_path):
    obj = {"b": 1, "a": [1.5, None], "p": tmp_path}
    got = atomic.write_json(tmp_path / "x.json", obj).read_text(encoding="utf-8")
    assert got == json.dumps(obj, indent=2, default=str) + "\n"
    with pytest.raises(TypeError):  # default=None: what JSON cannot hold is an error, as json.dumps says
        atomic.write_json(tmp_path / "y.json", obj, default=None)
    assert not list(tmp_path.glob("*y.json*"))


def test_fsync_only_when_asked(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    atomic.write_bytes(tmp_path / "a", b"x")
    assert synced == []
    atomic.write_bytes(tmp_path / "b", b"y", fsync=True)
    assert len(synced) == 1 and (tmp_path / "b").read_bytes() == b"y"


def test_a_folder_is_replaced_whole_and_its_old_copy_removed(tmp_path):
    folder, staged = tmp_path / "best", tmp_path / "best.tmp"
    folder.mkdir()
    (folder / "old.txt").write_text("old")
    staged.mkdir()
    (staged / "new.txt").write_text("new")
    atomic.replace_folder(staged, folder)
    assert [p.name for p in folder.iterdir()] == ["new.txt"] and sorted(p.name for p in tmp_path.iterdir()) == ["best"]
