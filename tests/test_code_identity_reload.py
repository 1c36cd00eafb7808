"""A plug-in's code hash follows its file (core/code_identity.py): importlib.reload and IPython's %autoreload keep the
module object, so an edit must still change ``pooler_code`` and its stale cached vectors and records go unused."""

from __future__ import annotations

import importlib
import os
import sys

import pytest

from embench.core.code_identity import code_hash


def test_an_edited_and_reloaded_module_is_hashed_anew(tmp_path, monkeypatch):
    name = "embench_reload_probe_plugin"
    source = tmp_path / f"{name}.py"
    source.write_text("def pool(h):\n    return h.mean(0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    importlib.invalidate_caches()
    module = importlib.import_module(name)
    try:
        before = code_hash(module.pool)
        assert code_hash(module.pool) == before  # unchanged file: the same hash
        source.write_text("def pool(h):\n    return h.max(0)\n")
        st = source.stat()
        os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))  # a coarse clock must not hide the edit
        reloaded = importlib.reload(module)
        assert reloaded is module  # the same module object, as %autoreload keeps it
        assert code_hash(module.pool) != before
    finally:
        sys.modules.pop(name, None)


def _package(root, scale: str = "1.0"):
    """A plug-in package of two modules: the pooler's, and a helper module whose constant it multiplies by."""
    (root / "embench_probe_pkg").mkdir(parents=True, exist_ok=True)
    (root / "embench_probe_pkg/__init__.py").write_text("")
    (root / "embench_probe_pkg/helpers.py").write_text(f"SCALE = {scale}\n")
    (root / "embench_probe_pkg/pooling.py").write_text("from .helpers import SCALE\n\n\ndef pool(h):\n    return h * SCALE\n")
    return root


def _import_fresh(root, monkeypatch):
    """The package as a new process imports it (from ``root``)."""
    for name in [m for m in sys.modules if m.split(".")[0] == "embench_probe_pkg"]:
        del sys.modules[name]
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    return importlib.import_module("embench_probe_pkg.pooling")


@pytest.fixture()
def probe_package(monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    yield
    for name in [m for m in sys.modules if m.split(".")[0] == "embench_probe_pkg"]:
        del sys.modules[name]


def test_a_file_edited_after_import_keeps_the_hash_of_the_code_that_runs(tmp_path, monkeypatch, probe_package):
    """A plug-in's file edited in a live session without a reload runs its old code: its hash once followed the file,
    so the old code's vectors were stored under the new code's key and served from then on in every process."""
    module = _import_fresh(_package(tmp_path), monkeypatch)
    before = code_hash(module.pool)
    source = tmp_path / "embench_probe_pkg/pooling.py"
    source.write_text(source.read_text().replace("h * SCALE", "h * SCALE * 10"))
    assert module.pool(1.0) == 1.0 and code_hash(module.pool) == before  # the old code runs: the old code's hash
    assert code_hash(_import_fresh(tmp_path, monkeypatch).pool) != before  # imported anew: the new code's


def test_a_helper_module_of_the_plugin_package_is_in_its_hash(tmp_path, monkeypatch, probe_package):
    """A constant in a helper module of the pooler's package changes its vectors: the hash once covered the pooler's
    own file alone, so an edited helper was served the old vectors."""
    before = code_hash(_import_fresh(_package(tmp_path / "a"), monkeypatch).pool)
    assert code_hash(_import_fresh(_package(tmp_path / "b"), monkeypatch).pool) == before  # the same code elsewhere
    assert code_hash(_import_fresh(_package(tmp_path / "c", scale="2.0"), monkeypatch).pool) != before


def test_a_function_edited_before_its_first_hash_is_refused(tmp_path, monkeypatch, probe_package):
    """Edited between the import and the first hash, the file's hash would name code that does not run: refused."""
    from embench.core.errors import EmbenchError

    module = _import_fresh(_package(tmp_path), monkeypatch)
    source = tmp_path / "embench_probe_pkg/pooling.py"
    source.write_text("\n\n" + source.read_text())  # moved, not changed: still the code that runs
    unchanged = code_hash(module.pool)
    module = _import_fresh(_package(tmp_path / "b"), monkeypatch)
    source = tmp_path / "b/embench_probe_pkg/pooling.py"
    source.write_text(source.read_text().replace("h * SCALE", "h * SCALE * 10"))
    with pytest.raises(EmbenchError, match="pooling.py: pool was edited after embench_probe_pkg.pooling was imported"):
        code_hash(module.pool)
    assert code_hash(importlib.reload(module).pool) != unchanged  # reloaded: the new code, hashed
