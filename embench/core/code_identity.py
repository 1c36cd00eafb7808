"""What code from outside embench is, for the keys of the vectors and records it makes.

embench's own poolers and tasks are keyed by their names: their code is embench's. A plug-in (an entry point of
another distribution) or an object registered at run time (``POOLERS.add``, ``TASKS.add``) was keyed by its name
too, so a plug-in pooler whose code changed was served its old vectors from the embedding cache and its old stored
records. Its identity names where it comes from (the distribution and its version, the entry point; or the module
and name) and hashes its module's source file: an editable install (``pip install -e``) changes the code and keeps
the version, and the module's bytes also cover a helper the object calls there, which its own source would not.
"""

from __future__ import annotations

import hashlib
import inspect
import sys
from pathlib import Path
from typing import Any

from .hashing import file_sha256
from .plugins import Plugin


def _module_of(obj: Any) -> str:
    return str(getattr(obj, "__module__", None) or getattr(type(obj), "__module__", "") or "")


def code_hash(obj: Any) -> str:
    """sha256 (16 hex) of the source file of ``obj``'s module (a function's, a class's, an instance's class's); of its
    own source where the module has no file (a notebook, ``python -c``); of its qualified name where neither reads."""
    module = sys.modules.get(_module_of(obj))
    try:  # memoised on the file's stat (core/hashing.file_sha256), not on the module object: importlib.reload and
        # IPython's %autoreload keep the object, and a cache per module served the old hash after an edit
        path = inspect.getsourcefile(module) if module is not None else None
        if path:
            return file_sha256(Path(path))[:16]
    except (OSError, TypeError):
        pass
    try:
        text = inspect.getsource(obj if inspect.isfunction(obj) or inspect.isclass(obj) else type(obj))
    except (OSError, TypeError):
        text = f"{_module_of(obj)}.{getattr(obj, '__qualname__', type(obj).__qualname__)}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def outside_code(obj: Any, plugin: Plugin | None) -> str | None:
    """``obj``'s identity when its code is not embench's: ``DISTRIBUTION VERSION, ENTRY POINT, code HASH`` for a
    plug-in, ``MODULE:NAME, code HASH`` for an object registered at run time; None for embench's own."""
    module = _module_of(obj)
    if plugin is None and (module == "embench" or module.startswith("embench.")):
        return None
    origin = (f"{plugin.distribution}, {plugin.value}" if plugin is not None else
              f"{module}:{getattr(obj, '__qualname__', type(obj).__qualname__)}")
    return f"{origin}, code {code_hash(obj)}"
