"""An output the user names is written through what the name leads to (core/atomic.py): a symlink's target is
replaced and the link kept, a FIFO or a device (``/dev/stdout``, ``/dev/fd/N``, ``os.devnull``) is written in place,
and a replaced file keeps its permission bits. embench's own files (regular files in its folders) stay atomic."""

from __future__ import annotations

import os
import stat

import pytest

from embench.core import atomic

pytestmark = pytest.mark.skipif(os.name != "posix", reason="symlinks, FIFOs and /dev are POSIX")


def _leftovers(*folders):
    return [p.name for f in folders for p in f.iterdir() if p.name.endswith(atomic.TMP_SUFFIX)]


def test_a_symlink_is_written_through_and_stays_a_link(tmp_path):
    real, docs = tmp_path / "real", tmp_path / "docs"
    real.mkdir()
    docs.mkdir()
    (real / "table.md").write_text("old\n")
    link = docs / "table.md"
    link.symlink_to("../real/table.md")
    atomic.write_output(link, "new\n")
    assert link.is_symlink() and (real / "table.md").read_text() == "new\n"
    with atomic.atomic_path(link) as tmp:  # a writer that opens the file itself
        assert tmp.parent == real  # the temporary name is in the target's folder: the rename stays in one folder
        tmp.write_text("newer\n")
    assert link.is_symlink() and (real / "table.md").read_text() == "newer\n"
    assert _leftovers(real, docs) == []


def test_a_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader first, so the writer's open does not block
    try:
        atomic.write_output(fifo, "through the pipe\n")
        assert os.read(reader, 1000) == b"through the pipe\n"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and _leftovers(tmp_path) == []


def test_a_descriptor_name_like_dev_stdout_is_written_in_place():
    r, w = os.pipe()
    try:
        atomic.write_output(f"/dev/fd/{w}", "to the stream\n")  # what /dev/stdout leads to
        assert os.read(r, 1000) == b"to the stream\n"
    finally:
        os.close(r)
        os.close(w)


def test_the_null_device_takes_the_output_and_stays_a_device(monkeypatch):
    real_replace = os.replace

    def never_over_a_device(src, dst):  # as root, a rename over /dev/null would replace the machine's device
        assert os.path.realpath(dst) != os.path.realpath(os.devnull), "renamed over the null device"
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", never_over_a_device)
    atomic.write_output(os.devnull, "discarded\n")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_a_replaced_file_keeps_its_permission_bits_and_a_new_one_gets_the_umask(tmp_path):
    private = tmp_path / "private.md"
    private.write_text("old\n")
    private.chmod(0o600)
    atomic.write_output(private, "new\n")
    assert stat.S_IMODE(private.stat().st_mode) == 0o600 and private.read_text() == "new\n"
    with atomic.atomic_path(private) as tmp:
        tmp.write_text("newer\n")
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    umask = os.umask(0o022)
    os.umask(umask)
    fresh = atomic.write_output(tmp_path / "fresh.md", "x\n")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask


def test_embench_own_files_are_still_renamed_into_place(tmp_path, monkeypatch):
    renamed = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (renamed.append((src, dst)), real_replace(src, dst)))
    record = atomic.write_json(tmp_path / "records" / "r.json", {"a": 1})
    atomic.write_json(record, {"a": 2})
    assert [dst for _, dst in renamed] == [record, record] and all(src.parent == record.parent for src, _ in renamed)
    assert record.read_text() == '{\n  "a": 2\n}\n' and _leftovers(record.parent) == []


@pytest.mark.slow
def test_report_to_dev_stdout_reaches_a_pipe(tmp_path):
    import subprocess
    import sys

    # As root a rename over /dev/stdout would replace the machine's link: the child refuses any rename into /dev.
    code = ("import os; real = os.replace\n"
            "def guarded(src, dst):\n"
            "    assert not os.path.abspath(dst).startswith('/dev/'), 'renamed over ' + str(dst)\n"
            "    real(src, dst)\n"
            "os.replace = guarded\n"
            "from embench.core.atomic import write_output; write_output('/dev/stdout', 'table\\n', '-o')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "table\n" and stat.S_ISLNK(os.lstat("/dev/stdout").st_mode)
