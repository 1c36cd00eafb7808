"""The package's shape: every import runs down the layers, and no module imports its own importer."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import embench

PACKAGE = Path(embench.__file__).parent
# Lowest first. A module may import its own layer and those below, never one above. ``report`` holds
# presentation helpers that read records by their fields (the engine and the trainer use its
# progress bar), so it sits just above core. ``__init__`` is the package's public face.
LAYERS = (
    ("core",),
    ("stats",),
    ("report",),
    ("data",),
    ("encoding",),  # below models: a model's encode() goes through the engine and its cache
    ("models",),
    ("evaluation",),
    ("tasks",),
    ("api",),
    ("analysis", "audit", "train", "grid", "generate", "data_names"),
    ("__init__",),
    ("cli",),
)
RANK = {part: i for i, parts in enumerate(LAYERS) for part in parts}


def _module(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import, at any depth, outside ``if TYPE_CHECKING:`` blocks."""
    module = _module(path)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            return
        if isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            for a in node.names:  # ``from pkg import mod`` imports the module pkg.mod when there is one
                sub = f"{base}.{a.name}"
                found.append((node.lineno, sub if _is_module(sub) else base))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return [(line, name) for line, name in found if name == "embench" or name.startswith("embench.")]


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_module_belongs_to_a_layer():
    assert {_layer(_module(p)) for p in _sources()} <= set(RANK)


@pytest.mark.slow
def test_no_import_runs_back_up_a_layer():
    upward = []
    for path in _sources():
        here = _layer(_module(path))
        for line, name in _imports(path):
            if RANK[_layer(name)] > RANK[here]:
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({here}) imports {name} ({_layer(name)})")
    assert upward == []


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_no_module_imports_a_module_that_imports_it():
    graph = {_module(p): {n for _, n in _imports(p) if n != _module(p)} for p in _sources()}
    cycles, done = [], set()

    def walk(node: str, stack: list[str]) -> None:
        if node in stack:
            cycles.append(" -> ".join(stack[stack.index(node):] + [node]))
            return
        if node in done:
            return
        for nxt in sorted(graph.get(node, ())):
            walk(nxt, [*stack, node])
        done.add(node)

    for node in sorted(graph):
        walk(node, [])
    assert cycles == []
