"""Matryoshka truncation and quantisation as evaluation axes: a transform of the vectors the engine returns.

A :class:`VectorAxis` scores the first ``truncate_dim`` dimensions of each vector in a ``quantize``
precision, in the order sentence-transformers (6.x) gives them to ``EmbeddingSimilarityEvaluator(
truncate_dim=, precision=)``:

1. the model's vectors as its modules end them, after its own ``Normalize`` module if it has one
   (``SentenceTransformer._inference`` truncates ``out_features["sentence_embedding"]``, the output of
   the last module; embench's vectors are that output, ``HFEncoder._pool``);
2. truncated to their first ``truncate_dim`` dimensions (``util.truncate_embeddings``);
3. with a precision, L2-normalised again (the evaluator encodes with ``normalize_embeddings=bool(precision)``,
   applied after the truncation);
4. quantised (:func:`embench.encoding.quantize.quantize`); int8/uint8 calibrated on the task's own vectors:
   the evaluator quantises ``sentences1 + sentences2`` in one call, whose per-dimension min and max are
   those of every text the task scores; embench takes the same min and max over every text the task
   encodes (``Prepared.texts``: both sides of every pair, of every subset or split), and records that set;
5. compared as :func:`~embench.encoding.quantize.scored_form` gives them (cosine on the integers, or on
   the unpacked bits, as the evaluator does).

The transform runs after the engine: the embedding cache keeps the full vectors under the encoder's own
key, so every dimension and precision is scored from one encoding pass, and a new ``--truncate-dim`` or
``--quantize`` reuses the cache. The *record* key does include them (:meth:`VectorAxis.describe` adds
them to the encoder description that ``record_key`` hashes), as does the row's name.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.errors import EmbenchError
from ..core.hashing import stable_hash
from .quantize import CALIBRATED, calibration_ranges, check_precision, quantize, scored_form

Embed = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class VectorAxis:
    """The first ``truncate_dim`` dimensions (None: all) in ``quantize`` precision (None: as the model gives them)."""

    truncate_dim: int | None = None
    quantize: str | None = None

    def fields(self) -> dict[str, Any]:
        """The settings that are set (none for the vectors as they are, so such records keep their keys)."""
        return {k: v for k, v in (("truncate_dim", self.truncate_dim), ("quantize", self.quantize)) if v is not None}

    def describe(self, encoder: dict[str, Any]) -> dict[str, Any]:
        """The encoder description of a record scored on this axis (what ``record_key`` hashes)."""
        return {**encoder, **self.fields()}

    def row_name(self, model: str) -> str:
        """The model's row for this axis: ``all-MiniLM-L6-v2 (dim 128, int8)`` (the name alone without one)."""
        return model + suffix(self.fields())

    def reduce(self, vectors: np.ndarray) -> np.ndarray:
        """Steps 2-3 of the module docstring: what is quantised (and what int8/uint8 calibrate on)."""
        out = vectors if self.truncate_dim is None else vectors[:, : self.truncate_dim]
        return out if self.quantize is None else l2_normalise(out)

    def transform(self, vectors: np.ndarray, ranges: np.ndarray | None = None) -> np.ndarray:
        """Steps 2-5 of the module docstring on ``vectors`` (n, dim); int8/uint8 bucket by ``ranges``."""
        out = self.reduce(vectors)
        return out if self.quantize is None else scored_form(quantize(out, self.quantize, ranges), self.quantize)

    def embedder(self, embed: Embed, texts: Sequence[str]) -> AxisEmbed:
        """``embed`` through this axis for one task, whose texts are ``texts`` (the int8/uint8 calibration set)."""
        return AxisEmbed(self, embed, list(texts))

    def check(self, dim: int | None, model: str) -> None:
        """A truncation longer than the vectors is an error naming the option (before any task is scored)."""
        if dim is not None and self.truncate_dim is not None and self.truncate_dim > dim:
            raise EmbenchError(f"--truncate-dim {self.truncate_dim} is larger than the {dim} dimensions of {model}'s "
                               f"vectors; choose 1 to {dim}")


@dataclass
class AxisEmbed:
    """A task's ``embed`` callable on one axis; int8/uint8 ranges come from the task's own texts, once."""

    axis: VectorAxis
    embed: Embed
    texts: list[str]
    ranges: np.ndarray | None = field(default=None, repr=False)

    def __call__(self, texts: list[str]) -> np.ndarray:
        if self.axis.quantize in CALIBRATED and self.ranges is None:
            self.ranges = calibration_ranges(self.axis.reduce(self.embed(self.texts)))
        vectors = self.embed(texts)
        return self.axis.transform(vectors, self.ranges) if len(vectors) else vectors

    def provenance(self, dim: int | None) -> dict[str, Any]:
        """What a record on this axis adds to its provenance: the vectors' length and, for int8/uint8, the
        calibration set (the task's texts: how many and a digest of them)."""
        out: dict[str, Any] = {**self.axis.fields()}
        if self.axis.truncate_dim is not None:  # the length of the vectors scored
            out["embedding_dim"] = self.axis.truncate_dim if dim is None else min(self.axis.truncate_dim, dim)
        if self.axis.quantize in CALIBRATED:
            unique = sorted(set(self.texts))
            out["quantize_calibration"] = {
                "set": "the task's own texts, every one it encodes: both sides of each pair of an STS task (as "
                       "sentence-transformers' EmbeddingSimilarityEvaluator calibrates on sentences1 + sentences2), every "
                       "split's texts of a transfer task",
                "texts": len(unique), "digest": stable_hash(unique, 16), "ranges": "per-dimension min and max"}
        return out


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length by ``torch.nn.functional.normalize``, the call sentence-transformers makes: the
    same float32 rounding, so int8/uint8 buckets fall where they fall there."""
    import torch

    return torch.nn.functional.normalize(torch.from_numpy(np.ascontiguousarray(vectors, dtype=np.float32)), p=2, dim=1).numpy()


def suffix(fields: dict[str, Any]) -> str:
    """`` (dim 128, int8)`` for a record's (or an axis') truncate_dim and quantize; empty without them."""
    parts = ([f"dim {fields['truncate_dim']}"] if fields.get("truncate_dim") is not None else []) + (
        [str(fields["quantize"])] if fields.get("quantize") is not None else [])
    return f" ({', '.join(parts)})" if parts else ""  # not [...]: rich would read it as markup


def _plain(x: Any) -> Any:
    return getattr(x, "value", x)  # a CLI choice (a str Enum) as its string


def _listed(x: Any) -> list[Any]:
    return [] if x is None else [_plain(v) for v in x] if isinstance(x, (list, tuple)) else [_plain(x)]


def axis_values(truncate_dim: int | Sequence[int] | None = None,
                quantize: str | Sequence[str] | None = None) -> tuple[list[int | None], list[str | None]]:
    """The dimensions and precisions asked for, each one value or several (the command line's repeated
    ``--truncate-dim`` / ``--quantize``), checked; None in a list is the vectors' own (the audit's grid)."""
    dims, precisions = _listed(truncate_dim), _listed(quantize)
    for d in dims:
        if d is not None and (isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d <= 0):
            raise EmbenchError(f"--truncate-dim {d!r}: a truncation is a number of dimensions, 1 or more")
    for q in precisions:
        if q is not None:
            check_precision(q)
    return [None if d is None else int(d) for d in dims], precisions


def vector_axes(truncate_dim: int | Sequence[int] | None = None, quantize: str | Sequence[str] | None = None) -> list[VectorAxis]:
    """Every (dimension, precision) asked for (:func:`axis_values`), in order, each once; none gives the vectors as
    they are."""
    dims, precisions = axis_values(truncate_dim, quantize)
    pairs = itertools.product(dims or [None], precisions or [None])
    return [VectorAxis(d, q) for d, q in dict.fromkeys(pairs)]


def check_dims(axes: Sequence[VectorAxis], dim: int | None, model: str) -> None:
    """Every axis' truncation fits the vectors (``dim`` long): checked once they are encoded, before any scoring."""
    for axis in dict.fromkeys(axes):
        axis.check(dim, model)


def one_axis(truncate_dim: Any = None, quantize: Any = None, what: str = "compare") -> None:
    """``what`` (a paired comparison, a seed group's mean) takes one configuration of each model: several dimensions
    or precisions are an error, before any encoding."""
    if len(vector_axes(truncate_dim, quantize)) > 1:
        # (the Python API says truncate_dim and quantize: core/spellings.py)
        raise EmbenchError(f"{what} takes one configuration of each model: give one --truncate-dim and one --quantize "
                           "(run it once per dimension or precision, the vectors come from the cache)")
