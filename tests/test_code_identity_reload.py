"""A plug-in's code hash follows its file (core/code_identity.py): importlib.reload and IPython's %autoreload keep the
module object, so an edit must still change ``pooler_code`` and its stale cached vectors and records go unused."""

from __future__ import annotations

import importlib
import os
import sys

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
