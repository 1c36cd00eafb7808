"""YAML a user writes (task files, grid protocol files, training configs), read one way everywhere.

* A key given twice in one mapping is an error naming both lines. PyYAML keeps the last one silently, so
  ``kind: pairs`` then ``kind: classification`` ran a classification task, and ``files: {test: a, test: b}`` scored b.
* A syntax error is named by the line and column where the parser found it (its ``problem_mark``); where the
  enclosing block or bracket began (its ``context_mark``) is said after the problem. Naming the context's line
  alone sent a reader to line 1 for a bad indent on line 5.

PyYAML is imported on first use: the CLI imports this module while building ``--help``.
"""

from __future__ import annotations

import functools
from typing import Any

MERGE_TAG = "tag:yaml.org,2002:merge"  # ``<<: *base``: YAML's merge key, which an explicit key may then override


@functools.cache
def unique_key_loader() -> type:
    """``yaml.SafeLoader`` that refuses a key written twice in one mapping."""
    import yaml
    from yaml.constructor import ConstructorError

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> dict:
            if isinstance(node, yaml.MappingNode):
                # the keys as written, before the merge keys' mappings are flattened in (those may be overridden)
                seen: dict[Any, Any] = {}
                for key_node, _ in node.value:
                    if key_node.tag == MERGE_TAG:
                        continue
                    key = self.construct_object(key_node, deep=True)
                    try:
                        first = seen.setdefault(key, key_node)
                    except TypeError:  # an unhashable key: SafeLoader's own error says so below
                        continue
                    if first is not key_node:
                        raise ConstructorError(
                            None, None, f"the key {key!r} is given twice (first at line {first.start_mark.line + 1}, column "
                                        f"{first.start_mark.column + 1}); "
                                        "give each key once", key_node.start_mark)
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def load_yaml(text: str) -> Any:
    """The data of one YAML document, as ``yaml.safe_load`` gives it, a repeated key refused (``yaml.YAMLError``)."""
    import yaml

    return yaml.load(text, Loader=unique_key_loader())  # noqa: S506  (a SafeLoader subclass)


def load_yaml_node(text: str) -> tuple[Any, Any]:
    """(data, its root node) from one parse: the node tree keeps each key's line, which the data does not."""
    loader = unique_key_loader()(text)
    try:
        node = loader.get_single_node()
        return (loader.construct_document(node) if node is not None else None), node
    finally:
        loader.dispose()


def yaml_error(source: str, error: Exception) -> str:
    """``source:LINE:COLUMN: not valid YAML: PROBLEM (CONTEXT at line L, column C)`` for a ``yaml.YAMLError``."""
    problem, context = getattr(error, "problem", None), getattr(error, "context", None)
    mark, context_mark = getattr(error, "problem_mark", None), getattr(error, "context_mark", None)
    mark = mark or context_mark
    at = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
    if context and context_mark is not None and context_mark is not mark:
        context = f"{context} at line {context_mark.line + 1}, column {context_mark.column + 1}"
    what = f"{problem} ({context})" if problem and context else problem or context or str(error)
    return f"{source}{at}: not valid YAML: {what}"
