"""The model catalogue: what a known model needs, one row each (``catalogue.toml``; ``embench list models``).

A row says what mteb's ``ModelMeta`` says of a model (``mteb/models/model_implementations/e5_models.py`` is
the shape): the pinned hub revision, the prompts per side (and per task type), the instruction template of
an instruction model, the pooling, normalisation, similarity and lengths, and where the model is cited.
:func:`embench.models.loader.load_model` applies a row as defaults: the pinned revision when the model
comes from the hub, its prompts over the folder's own, and pooling, normalisation and maximum length where
the checkpoint has no sentence-transformers config of its own. Any option the user gives overrides the row.

Reading the table imports no torch: ``embench list models`` stays instant.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..core.errors import EmbenchError
from ..core.registry import Registry
from .aliases import ALIASES

TABLE = Path(__file__).with_name("catalogue.toml")
FIELDS = ("name", "hub", "aliases", "revision", "pooling", "normalize", "max_length", "max_tokens", "dim", "similarity",
          "prompts", "default_prompt", "instruction", "remote_code", "citation", "reference", "note")


@dataclass(frozen=True)
class ModelRow:
    """One known model: how it is loaded, prompted, pooled and compared, and where it is cited."""

    name: str
    hub: str | None = None  # the hub id, when it differs from the name (an alias's)
    aliases: tuple[str, ...] = ()
    revision: str | None = None  # a hub commit (mteb's ModelMeta); None: the hub's default branch
    pooling: str | None = None  # applied where the checkpoint has no pooling config of its own
    normalize: bool | None = None
    max_length: int | None = None  # applied as a --max-length default
    max_tokens: int | None = None  # the model's limit (shown)
    dim: int | None = None
    similarity: str = "cosine"
    prompts: dict[str, str] = field(default_factory=dict)  # name -> prefix: query, document, task types
    default_prompt: str | None = None
    instruction: str | None = None  # "... {instruction} ...": an instruction model's query template
    remote_code: bool = False  # the checkpoint needs trust_remote_code
    citation: str = ""
    reference: str = ""
    note: str = ""

    @property
    def hub_id(self) -> str:
        return self.hub or self.name

    def describe(self) -> str:
        """One line for ``embench list models``: revision, pooling, prompts, size, similarity."""
        pool = (self.pooling or "the model's own") + (", normalised" if self.normalize else "")
        sides = [f"{k}={v!r}" for k, v in self.prompts.items() if k in ("query", "document")]
        others = len(self.prompts) - len(sides)
        prompts = ("instruction " + repr(self.instruction) if self.instruction else " ".join(sides) or "none") + (
            f" (+{others} by task type)" if others else "")
        size = ", ".join(x for x in (f"dim {self.dim}" if self.dim else "", f"max {self.max_tokens} tokens" if self.max_tokens else "") if x)
        return "  ".join(x for x in (f"rev {self.revision[:7]}" if self.revision else "rev unpinned", f"pooling {pool}",
                                      f"prompts {prompts}", size, self.similarity,
                                      "needs trust_remote_code=True" if self.remote_code else "") if x)


def _row(raw: dict[str, Any], where: str) -> ModelRow:
    unknown = sorted(set(raw) - set(FIELDS))
    if unknown or "name" not in raw:
        raise EmbenchError(f"{where}: a model row needs a name and takes only {', '.join(FIELDS)}; got {unknown or 'no name'}")
    prompts = raw.get("prompts", {})
    if not isinstance(prompts, dict) or not all(isinstance(v, str) for v in prompts.values()):
        raise EmbenchError(f"{where}: the prompts of {raw['name']} must map names to texts")
    if raw.get("instruction") is not None and "{instruction}" not in raw["instruction"]:
        raise EmbenchError(f"{where}: the instruction of {raw['name']} has no {{instruction}}")
    return ModelRow(**{**raw, "aliases": tuple(raw.get("aliases", ())), "prompts": dict(prompts)})


@lru_cache(maxsize=1)
def _rows() -> tuple[ModelRow, ...]:
    try:
        table = tomllib.loads(TABLE.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise EmbenchError(f"{TABLE}: the model catalogue is not readable ({e})") from None
    return tuple(_row(raw, f"{TABLE} row {i + 1}") for i, raw in enumerate(table.get("model", [])))


MODELS: Registry[ModelRow] = Registry("known model")
for _r in _rows():
    MODELS.add(_r.name, _r, *(a for a in (*_r.aliases, _r.hub) if a), description=_r.describe())


def row_for(name: Any) -> ModelRow | None:
    """The row of a model named by its name, hub id or alias (any case); None for any other model or a folder."""
    return MODELS.get(name) if isinstance(name, str) and name in MODELS else None


def row_to_load(name: Any) -> ModelRow | None:
    """The row :func:`~embench.models.loader.load_model` applies to ``name``: a hub id's or alias's (:func:`row_for`),
    none where the name reaches a local folder or ``.gguf`` file as a path, however it is spelled (``e5-base-v2``,
    ``./e5-base-v2``, absolute), as the loader reads it (an installed alias before a folder: model_names.py). Only the
    bare spelling once took the row of a folder in the working directory named like a known model; sentence-transformers
    loads such a folder with its own files, and so does embench now."""
    text = str(name)
    if text not in ALIASES:
        path = Path(text).expanduser()
        if path.is_dir() or (path.is_file() and path.suffix == ".gguf"):
            return None
    return row_for(text)


def row_settings(row: ModelRow | None, has_own_config: bool) -> dict[str, Any]:
    """What a row sets as the loader's defaults: its maximum length, and its pooling and normalisation where the
    checkpoint has no sentence-transformers config of its own (a folder's own config is the model's word)."""
    if row is None:
        return {}
    own = {} if has_own_config else {"pooling": row.pooling, "normalize": row.normalize}
    return {k: v for k, v in {**own, "max_length": row.max_length}.items() if v is not None}
