"""A training configuration built in layers, later ones winning: the dataclass defaults, the
method's defaults (``methods/``: the papers' numbers), a recipe (``recipes.py``), a YAML/TOML file,
then the command line. A method's own options may be given flat (``--set temperature=0.1``) or
nested (``method_options: {temperature: 0.1}``); an unknown name gets the nearest known ones.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..core.boundary import python_api
from ..core.errors import EmbenchError
from ..core.registry import nearest
from .config import FIELDS, TrainConfig, option_flag, read_config_file
from .methods import METHODS
from .recipes import RECIPES
from .resolution import check_file_values, typed
from .spellings import OVERRIDES, make_config_spelling


@python_api(make_config_spelling)  # its errors say lr=, data=, not the command line's --lr, --train-data
def make_config(file: str | Path | None = None, **overrides: Any) -> TrainConfig:
    """A config from the method's defaults, an optional recipe, an optional file, then ``overrides``
    (``None`` values are ignored).

    >>> make_config(recipe="crop", model="all-MiniLM-L6-v2", data=["20newsgroups"], max_steps=100)  # doctest: +SKIP
    """
    layers: list[tuple[str, dict[str, Any]]] = []
    if file is not None:
        layers.append((f"--config {file}", _normalised(read_config_file(file))))
    layers.append((OVERRIDES, _normalised({k: v for k, v in overrides.items() if v is not None})))
    recipe_name = next((vals["recipe"] for _, vals in reversed(layers) if vals.get("recipe")), None)
    if recipe_name:
        recipe = RECIPES.get(recipe_name)
        layers.insert(0, (f"recipe {recipe.name}", {**_normalised(recipe.values), "recipe": recipe.name}))
    method_name = next((vals["method"] for _, vals in reversed(layers) if vals.get("method")), TrainConfig.method)
    key = METHODS.canonical(method_name)
    method = METHODS.get(key)
    layers.insert(0, (f"method {key}", _normalised(method.defaults)))
    values: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for where, layer in layers:
        general, own = _split(layer, method, key, where)
        if file is not None and where == f"--config {file}":  # a bad value named by the file's key, not a flag
            check_file_values(general, own, method.Options, where)
        values.update(general)
        options.update(own)
    values["method"] = key
    # typed here already (resolve types again, for a config made otherwise): `data: x.txt` or `--set eval_tasks=STS12`
    # is a list of one and `--set select_initial=False` is False in what --seeds compares and records, not only in
    # what trains
    values.update(typed(TrainConfig, values, option_flag))
    values["method_options"] = {**options, **typed(method.Options, options, lambda name: f"--set {name}")}
    return TrainConfig(**values)


def missing_requirements(cfg: TrainConfig) -> dict[str, str]:
    """The options ``cfg``'s recipe cannot run without and that are not set (option -> why)."""
    if not cfg.recipe:
        return {}
    opts = cfg.method_options if isinstance(cfg.method_options, dict) else dataclasses.asdict(cfg.method_options)
    return {k: why for k, why in RECIPES.get(cfg.recipe).requires.items()
            if getattr(cfg, k, None) is None and opts.get(k) is None}


def given_options(file: str | Path | None = None, **overrides: Any) -> set[str]:
    """The options the user gave, in ``file`` or as ``overrides`` (as :func:`make_config` takes them; ``None``
    is not given), a method's nested ones by their own names: what ``--show`` marks as set here."""
    raw = _normalised(read_config_file(file)) if file is not None else {}
    raw.update(_normalised({k: v for k, v in overrides.items() if v is not None}))
    names = {k for k in raw if k != "method_options"}
    if isinstance(raw.get("method_options"), dict):
        names |= set(_normalised(raw["method_options"]))
    return names


def _normalised(raw: dict[str, Any]) -> dict[str, Any]:
    return {k.replace("-", "_"): v for k, v in raw.items()}


def _split(raw: dict[str, Any], method: Any, key: str, where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(general options, the method's own options) of one layer; an unknown name is an error."""
    own_fields = {f.name for f in dataclasses.fields(method.Options)}
    general, own = {}, {}
    for name, value in raw.items():
        if name == "method_options":
            if not isinstance(value, dict):
                raise EmbenchError(f"{where}: method_options must be a mapping")
            nested = _normalised(value)
            for opt in nested:
                if opt not in own_fields:
                    _unknown({opt: None}, own_fields, key, where)
            own.update(nested)
        elif name in own_fields:
            own[name] = value
        elif name in FIELDS:
            general[name] = value
        else:
            _unknown({name: value}, own_fields, key, where)
    return general, own


def _unknown(raw: dict[str, Any], own_fields: set[str], method: str, where: str) -> None:
    bad = next(iter(raw))
    known = sorted(own_fields) + [f for f in FIELDS if f != "method_options"]
    hint = nearest(bad, known)
    did = f" Did you mean {', '.join(repr(h) for h in hint)}?" if hint else ""
    others = [m for m, cls in METHODS.items() if bad in {f.name for f in dataclasses.fields(cls.Options)}]
    theirs = f" It is an option of method {', '.join(others)}." if others else ""  # --sigma given to unsup-simcse
    raise EmbenchError(f"{where}: {bad!r} is neither a training option nor an option of method {method}.{did}{theirs} "
                       f"The options: embench train --help, and embench list methods")


