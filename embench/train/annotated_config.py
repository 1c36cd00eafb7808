"""The resolved training configuration as YAML, each value with where it comes from (``embench train --show``).

An option the recipe sets is followed on its line by the recipe's source for it (``# SimCSE Table A.1
...``: the section, table or script line in ``Recipe.sources``); an option given in ``--config`` or on the
command line says ``# set here``, with the recipe's value and source it replaces when the recipe sets it
too; an option neither sets (the method's or embench's default) stays plain. The notes are YAML comments,
so the text still loads (``yaml.safe_load``) to exactly ``cfg.to_dict()``: a ``--config`` file as before.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

import yaml

from .config import TrainConfig
from .recipes import RECIPES, Recipe

LEGEND = ("after each option the recipe sets: where its value comes from; 'set here': given in --config or on "
          "the command line; no note: the method's or embench's default")
_WIDTH = 1 << 30  # one line a scalar: a long prompt is not folded, so a note never splits a value


def annotated_yaml(cfg: TrainConfig, given: Collection[str] = ()) -> str:
    """``cfg`` as YAML, each line of an option that ``cfg.recipe`` sets or the user gave (``given``) noted.

    >>> print(annotated_yaml(resolve(make_config(recipe="crop")), {"lr"}))  # doctest: +SKIP
    lr: 0.0001  # set here (the recipe: 2e-05, cropping paper §3.1 ...)
    """
    recipe = RECIPES.get(cfg.recipe) if cfg.recipe else None
    lines: list[str] = []
    for key, value in cfg.to_dict().items():
        if key == "method_options" and isinstance(value, dict) and value:
            lines.append("method_options:")
            for name, option in value.items():
                lines += _entry(name, option, _note(name, recipe, given), "  ")
        else:
            lines += _entry(key, value, _note(key, recipe, given), "")
    return "\n".join(lines) + "\n"


def _note(option: str, recipe: Recipe | None, given: Collection[str]) -> str | None:
    source = recipe.source(option) if recipe is not None else None
    if option in given and option != "recipe":  # --recipe itself is the header's subject
        return f"set here (the recipe: {_shown(recipe.values[option])}, {source})" if source else "set here"
    return source


def _entry(key: str, value: Any, note: str | None, indent: str) -> list[str]:
    """One option's YAML lines, the note on the line of its key (a mapping or list: the key alone) or, for a
    scalar whose text runs over lines (one holding a newline), on its last line, after the value."""
    lines = [indent + line for line in
             yaml.safe_dump({key: value}, sort_keys=False, width=_WIDTH, allow_unicode=True).rstrip("\n").split("\n")]
    if note:
        at = 0 if lines[0] == f"{indent}{key}:" else len(lines) - 1
        lines[at] += "  # " + " ".join(note.split())  # a comment is one line
    return lines


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)
