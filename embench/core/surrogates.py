"""Text that UTF-8 cannot hold: a lone surrogate, refused where the text comes in.

JSON may write half of a UTF-16 pair on its own (``"\\ud800"``), and ``json.loads`` turns it into a lone surrogate:
a code point that is no character. Nothing downstream takes one: the embedding cache keys a text by its UTF-8
bytes (UnicodeEncodeError, a traceback even with the cache off), and the tokenizers library raises a TypeError.
So every reader of texts asks :func:`surrogate_problem` and names its file and line (or its argument and the
text's index) instead. A file of UTF-8 bytes cannot hold one (strict decoding refuses it first): only JSON's
escapes, and Python callers, bring them.
"""

from __future__ import annotations

import re
from typing import Any

# a JSON escape of a surrogate half (D800-DFFF): a line without one cannot hold a lone surrogate, and is not walked
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def surrogate_problem(text: str) -> str | None:
    """What is wrong with ``text`` (to follow its name in an error), or None when UTF-8 holds it."""
    if text.isascii():  # the common case, without an encoding pass
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return (f"holds a lone surrogate U+{ord(text[e.start]):04X} at character {e.start} (half of a UTF-16 pair "
                "without its other half, e.g. a JSON \\ud800 escape): it is no character, and no tokenizer reads it")
    return None


def json_surrogate_problem(line: str, value: Any) -> str | None:
    """What is wrong with ``value`` (decoded from the JSON text ``line``): the first string in it (a key, a value,
    at any depth) holding a lone surrogate, named by its key; None when it has none."""
    if not _SURROGATE_ESCAPE.search(line):
        return None
    stack: list[tuple[str, Any]] = [("", value)]  # a loop, not a recursion: JSON nests deeper than a recursion may go
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            problem = surrogate_problem(item)
            if problem is not None:
                return f"{where or 'the value'} {problem}"
        elif isinstance(item, dict):
            for key, inner in reversed(item.items()):
                problem = surrogate_problem(key)
                if problem is not None:
                    return f"a key ({key!r}) {problem}"
                stack.append((f"{key!r}" if not where else f"{where}[{key!r}]", inner))
        elif isinstance(item, list):
            stack.extend((f"{where or 'the value'}[{i}]", inner) for i, inner in reversed(list(enumerate(item))))
    return None
