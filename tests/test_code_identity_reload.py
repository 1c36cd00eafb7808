"""A plug-in's code hash follows its file (core/code_identity.py): importlib.reload and IPython's %autoreload keep the
module object, so an edit must still change ``pooler_code`` and its stale cached vectors and records go unused."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
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


def _forgotten_after(monkeypatch, top: str):
    """No bytecode written while a test runs, and the probe package ``top``'s modules forgotten after it."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    yield
    for name in [m for m in sys.modules if m.split(".")[0] == top]:
        del sys.modules[name]


@pytest.fixture()
def probe_package(monkeypatch):
    yield from _forgotten_after(monkeypatch, "embench_probe_pkg")


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


class _Rewriting(importlib.machinery.SourceFileLoader):
    """An import hook that rewrites the code it loads, as pytest's assertion rewriting, typeguard and beartype do."""

    def source_to_code(self, data, path, *, _optimize=-1):
        return compile(data.replace(b"h * SCALE", b"h * SCALE + 0"), path, "exec", dont_inherit=True)


def test_code_an_import_hook_rewrote_from_an_unedited_file_is_not_refused(tmp_path, monkeypatch):
    """Its code is not what the file compiles to, so it was refused as "edited after the import" (a pooler defined in
    a pytest test module, under typeguard or beartype): only what Python's own loader read is checked."""
    name, path = "embench_probe_rewritten", tmp_path / "embench_probe_rewritten.py"
    path.write_text("SCALE = 2\n\n\ndef pool(h):\n    return h * SCALE\n")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    spec = importlib.util.spec_from_file_location(name, path, loader=_Rewriting(name, str(path)))
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    assert code_hash(module.pool) == code_hash(module.pool)  # no error: the file is as imported


def _distribution(root, sub: str, body: str):
    """A distribution holding ``embench_probe_ns.<sub>`` of the namespace package ``embench_probe_ns``."""
    (root / "embench_probe_ns" / sub).mkdir(parents=True, exist_ok=True)
    (root / "embench_probe_ns" / sub / "__init__.py").write_text(body)
    return root


@pytest.fixture()
def probe_namespace(monkeypatch):
    yield from _forgotten_after(monkeypatch, "embench_probe_ns")


def _import_ns(monkeypatch, *roots):
    for name in [m for m in sys.modules if m.split(".")[0] == "embench_probe_ns"]:
        del sys.modules[name]
    monkeypatch.setattr(sys, "path", [str(r) for r in roots] + [p for p in sys.path if "embench_probe" not in p])
    importlib.invalidate_caches()
    return importlib.import_module("embench_probe_ns.one")


def test_a_namespace_package_is_hashed_by_the_regular_package_of_the_module_alone(tmp_path, monkeypatch,
                                                                                    probe_namespace):
    """A namespace package's ``__path__`` spans every distribution sharing its name (and follows sys.path): an edit
    to another distribution changed the pooler's hash, and so did that distribution's being installed at all."""
    one = _distribution(tmp_path / "ns1", "one", "def pool(h):\n    return h\n")
    two = _distribution(tmp_path / "ns2", "two", "X = 1\n")
    before = code_hash(_import_ns(monkeypatch, one, two).pool)
    (two / "embench_probe_ns/two/__init__.py").write_text("X = 2\n")
    assert code_hash(_import_ns(monkeypatch, one, two).pool) == before
    assert code_hash(_import_ns(monkeypatch, one).pool) == before
    (one / "embench_probe_ns/one/__init__.py").write_text("def pool(h):\n    return -h\n")
    assert code_hash(_import_ns(monkeypatch, one, two).pool) != before


def test_a_packages_files_are_listed_once_per_import(tmp_path, monkeypatch, probe_package):
    """Listing a big package's files takes 0.1-0.4 s, and was done at each hash."""
    import pathlib

    walks, rglob = [], pathlib.Path.rglob
    monkeypatch.setattr(pathlib.Path, "rglob", lambda self, *a, **k: walks.append(self) or rglob(self, *a, **k))
    module = _import_fresh(_package(tmp_path), monkeypatch)
    assert code_hash(module.pool) == code_hash(module.pool) and len(walks) == 1
    code_hash(_import_fresh(tmp_path, monkeypatch).pool)  # imported anew: listed anew (a file may have come)
    assert len(walks) == 2


def test_a_module_added_to_the_package_during_the_session_is_hashed(tmp_path, monkeypatch, probe_package):
    """The package's files were listed once per import of its top package: a helper module created and imported
    later in the session was never hashed, nor its edits once reloaded (%autoreload reloads it, never the top)."""
    module = _import_fresh(_package(tmp_path), monkeypatch)
    before = code_hash(module.pool)
    added = tmp_path / "embench_probe_pkg/extra.py"
    added.write_text("OFFSET = 1\n")
    importlib.invalidate_caches()
    extra = importlib.import_module("embench_probe_pkg.extra")
    with_extra = code_hash(module.pool)
    assert with_extra != before
    added.write_text("OFFSET = 2\n")
    importlib.reload(extra)
    assert code_hash(module.pool) != with_extra
