"""What code from outside embench is, for the keys of the vectors and records it makes.

embench's own poolers and tasks are keyed by their names: their code is embench's. A plug-in (an entry point of
another distribution) or an object registered at run time (``POOLERS.add``, ``TASKS.add``) was keyed by its name
too, so a plug-in pooler whose code changed was served its old vectors from the embedding cache and its old stored
records. Its identity names where it comes from (the distribution and its version, the entry point; or the module
and name) and hashes the ``.py`` files of the top-level package its module is in (of a namespace package, whose files
are every distribution's sharing its name, the first regular package under it; the module's own file when it is no
package): an editable install (``pip install -e``) changes the code and keeps the version, and a helper module
of the package (a constant, a function the pooler calls) changes what it computes as much as its own file does.

The hash is of the code that runs, not of the file on disk now: a module's file is hashed when this process first
sees the module and that hash stands until the module is imported again (``importlib.reload``, IPython's
``%autoreload``, a new process). A file edited in a live session without a reload runs its old code, and once
took the new hash, so old-code vectors were stored under the new code's key and served from then on. A file edited
between the import and that first hash is caught where the object's own functions differ from the file's (an error
asks for a reload; only for code Python's own loader read, not one an import hook rewrote); an edit elsewhere in
that window is not seen.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import inspect
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from .errors import EmbenchError
from .hashing import file_sha256
from .plugins import Plugin

# module name -> (the import it was hashed for: its spec, which a reload replaces; the hash of its file then)
_SEEN: dict[str, tuple[object, str]] = {}
_CHECKED: dict[str, object] = {}  # module name -> the import whose objects were checked against its file
# package name -> (the import its files were listed for, the list): listing a big package takes 0.1-0.4 s a call
_FILES: dict[str, tuple[object, list[tuple[str, Path]]]] = {}


def _module_of(obj: Any) -> str:
    return str(getattr(obj, "__module__", None) or getattr(type(obj), "__module__", "") or "")


def _file_of(module: ModuleType) -> Path | None:
    try:
        path = inspect.getsourcefile(module)
    except (OSError, TypeError):
        return None
    return Path(path).resolve() if path and Path(path).is_file() else None


def _generation(module: ModuleType) -> object:
    """Which import of ``module`` this is: its spec, which a reload replaces on the same module object."""
    return module.__spec__ if module.__spec__ is not None else module


def _as_imported(module: ModuleType, path: Path) -> str:
    """sha256 of ``module``'s file as it was when this import of it was first hashed (see the module's docstring)."""
    generation = _generation(module)
    seen = _SEEN.get(module.__name__)
    if seen is not None and seen[0] is generation:
        return seen[1]
    digest = file_sha256(path)
    _SEEN[module.__name__] = (generation, digest)
    return digest


def _package_files(top: ModuleType, again: bool = False) -> list[tuple[str, Path]]:
    """Every ``.py`` file of the package ``top`` (its ``__path__`` folders, ``__pycache__`` and hidden ones left out),
    named relative to its folder so that the hash holds wherever it is installed; listed once per import of it, or
    ``again``."""
    generation = _generation(top)
    listed = _FILES.get(top.__name__)
    if listed is not None and listed[0] is generation and not again:
        return listed[1]
    found = []
    for root in map(Path, getattr(top, "__path__", None) or ()):
        for path in sorted(root.rglob("*.py")):
            parts = path.relative_to(root).parts
            if not any(p == "__pycache__" or p.startswith(".") for p in parts):
                found.append(("/".join(parts), path.resolve()))
    _FILES[top.__name__] = (generation, sorted(found))
    return _FILES[top.__name__][1]


def _code_package(module_name: str) -> ModuleType | None:
    """The package whose files make ``module_name``'s hash: its top-level one, or, where that is a namespace package
    (no ``__init__.py``: its ``__path__`` spans every distribution that shares the name, and follows sys.path), the
    first regular package (or module) down its dotted name, so another distribution's edit does not change it."""
    parts = module_name.split(".")
    for i in range(1, len(parts) + 1):
        package = sys.modules.get(".".join(parts[:i]))
        if package is None or getattr(package, "__file__", None) is not None or not hasattr(package, "__path__"):
            return package
    return None


def _file_hash(path: Path, module: ModuleType | None) -> str:
    """An imported module's file as it was imported; one not imported yet as it is now (one gone since it was listed:
    gone)."""
    try:
        return _as_imported(module, path) if module is not None else file_sha256(path)
    except FileNotFoundError:
        return "gone"


def _source_hash(module_name: str) -> str | None:
    """The hash of the code of ``module_name``'s package (``_code_package``; or of the module's own file); None without
    a file."""
    module = sys.modules.get(module_name)
    if module is None:
        return None
    top = _code_package(module_name)
    files = _package_files(top) if top is not None and module_name != "__main__" else []
    if not files:  # a module that is no package's (a script, a single-file module)
        path = _file_of(module)
        return _as_imported(module, path)[:16] if path is not None else None
    loaded = {path: m for m in list(sys.modules.values()) if isinstance(m, ModuleType)
              and (m.__name__ == top.__name__ or m.__name__.startswith(top.__name__ + "."))
              and (path := _file_of(m)) is not None}
    # a module created and imported since the listing (which follows the top package's import: %autoreload reloads
    # submodules, never it) is listed now, so that it and its later reloads are hashed; one outside the package's
    # folders is never listed, so it does not have the package listed again at every hash
    roots = [Path(r).resolve() for r in getattr(top, "__path__", None) or ()]
    if any(path.is_relative_to(r) for path in loaded.keys() - {p for _, p in files} for r in roots):
        files = _package_files(top, again=True)
    h = hashlib.sha256()
    for name, path in files:
        h.update(f"{name}\0{_file_hash(path, loaded.get(path))}\n".encode())
    return h.hexdigest()[:16]


def _shape(code: Any) -> tuple:
    """What a code object computes, not where it sits (line numbers, file name): its bytecode, names and constants."""
    return (code.co_code, code.co_names, tuple(_shape(c) if hasattr(c, "co_code") else (type(c).__name__, repr(c))
                                                 for c in code.co_consts))


def _runs_its_file(module: ModuleType) -> bool:
    """Whether ``module``'s code is what compiling its file gives: only when Python's own loader read it. An import
    hook that rewrites code (pytest's assertion rewriting, typeguard's and beartype's loaders) runs other code from an
    unedited file, which was refused as "edited after the import"; its edits in that window go unseen."""
    loader = module.__spec__.loader if module.__spec__ is not None else getattr(module, "__loader__", None)
    return type(loader) is importlib.machinery.SourceFileLoader


def _check_runs_as_filed(obj: Any, module: ModuleType, path: Path) -> None:
    """Refuse ``obj`` when its code is not what its module's file now compiles to: the file was edited after the
    import and before this process first hashed it, so the file's hash would name code that does not run. Functions
    (a class's: its methods) are compared by qualified name; one the file lacks (a decorator's wrapper) is skipped."""
    target = obj if inspect.isfunction(obj) or inspect.isclass(obj) else type(obj)
    live = [target] if inspect.isfunction(target) else [f for f in vars(target).values() if inspect.isfunction(f)]
    live = [f for f in live if f.__module__ == module.__name__]
    if not live:
        return
    try:
        filed: dict[str, list] = {}
        todo = [compile(path.read_bytes(), str(path), "exec", dont_inherit=True)]
        while todo:
            code = todo.pop()
            filed.setdefault(code.co_qualname, []).append(_shape(code))
            todo.extend(c for c in code.co_consts if hasattr(c, "co_code"))
    except (OSError, SyntaxError, ValueError):
        filed = {}
    for f in live:
        if f.__code__.co_qualname in filed and _shape(f.__code__) not in filed[f.__code__.co_qualname]:
            raise EmbenchError(f"{path}: {f.__qualname__} was edited after {module.__name__} was imported, so the code "
                               "that runs is not the file's: reload the module (importlib.reload) or start a new process, "
                               "so that what it makes is keyed by the code that makes it")


def code_hash(obj: Any, module_name: str | None = None) -> str:
    """sha256 (16 hex) of the code of ``module_name`` (default: ``obj``'s module: a function's, a class's, an instance's
    class's) as imported: the ``.py`` files of its top-level package, or its own file; of ``obj``'s own source where
    the module has no file (a notebook, ``python -c``); of its qualified name where neither reads."""
    own = sys.modules.get(_module_of(obj))
    path = _file_of(own) if own is not None else None
    if own is not None and path is not None:  # its file not hashed yet for this import: is the file what runs?
        generation = _generation(own)
        if all(generation is not g for g in (_SEEN.get(own.__name__, (None,))[0], _CHECKED.get(own.__name__))):
            if _runs_its_file(own):
                _check_runs_as_filed(obj, own, path)
            _CHECKED[own.__name__] = generation
    module_name = module_name or _module_of(obj)
    digest = _source_hash(module_name)
    if digest is not None:
        return digest
    try:
        text = inspect.getsource(obj if inspect.isfunction(obj) or inspect.isclass(obj) else type(obj))
    except (OSError, TypeError):
        text = f"{module_name}.{getattr(obj, '__qualname__', type(obj).__qualname__)}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def outside_code(obj: Any, plugin: Plugin | None) -> str | None:
    """``obj``'s identity when its code is not embench's: ``DISTRIBUTION VERSION, ENTRY POINT, code HASH`` for a
    plug-in, ``MODULE:NAME, code HASH`` for an object registered at run time; None for embench's own. A plug-in's code
    is its entry point's module's: its object may be an instance of a class of embench's (a model family)."""
    module = _module_of(obj)
    if plugin is None and (module == "embench" or module.startswith("embench.")):
        return None
    origin = (f"{plugin.distribution}, {plugin.value}" if plugin is not None else
              f"{module}:{getattr(obj, '__qualname__', type(obj).__qualname__)}")
    where = plugin.value.partition(":")[0].strip() if plugin is not None else None
    return f"{origin}, code {code_hash(obj, where)}"
