"""Any object with an ``encode`` method as an embench encoder (a ``SentenceTransformer``, a user's own model).

mteb takes "anything with ``encode``"; so does :func:`embench.evaluate`. The object's ``encode(texts)``
is called on the engine's batches (sorted by length, deduplicated), with the sentence-transformers
keywords it accepts (``batch_size``, ``show_progress_bar=False``, ``convert_to_numpy=True``).

Caching and stored records need to know which weights gave the vectors. A ``torch.nn.Module`` (every
``SentenceTransformer`` is one) is fingerprinted from its parameters, its printed module stack
(pooling and normalisation settings are in the print, not the parameters) and what its encode() applies besides
(a truncation, prompts: :data:`ENCODE_ATTRIBUTES`); any other object is
fingerprinted only when it says so (a ``fingerprint`` argument or attribute). Without a fingerprint the
vectors are not cached and stored records are not reused: a changed model under an unchanged name must
not be served old numbers.
"""

from __future__ import annotations

import hashlib
import inspect
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import EmbenchError
from ..core.hashing import stable_hash
from ..encoding.st_face import SentenceEncode

ST_KEYWORDS = {"show_progress_bar": False, "convert_to_numpy": True}
# what a SentenceTransformer's encode() applies that neither its parameters nor its print show
ENCODE_ATTRIBUTES = ("truncate_dim", "prompts", "default_prompt_name")


def has_encode(obj: Any) -> bool:
    return callable(getattr(obj, "encode", None))


def object_fingerprint(obj: Any) -> str | None:
    """A fingerprint of the object's state: its own ``fingerprint``, else a hash of a module's parameters."""
    own = getattr(obj, "fingerprint", None)
    if isinstance(own, str) and own:
        return own
    import torch

    if isinstance(obj, torch.nn.Module):
        from .fingerprints import module_fingerprint

        h = hashlib.sha256(module_fingerprint(obj).encode())
        h.update(repr(obj).encode())
        own = encode_attributes(obj) | _text_settings(obj)
        if own:  # hashed only where set: an object without them keeps the fingerprint it had
            h.update(stable_hash(own, 64).encode())
        return h.hexdigest()[:16]
    return None


def encode_attributes(obj: Any) -> dict[str, Any]:
    """The object's truncation, prompts (those with text: sentence-transformers saves empty ones) and default prompt
    name, where set: each changes what its encode() returns."""
    found = {k: getattr(obj, k, None) for k in ENCODE_ATTRIBUTES}
    if isinstance(found["prompts"], dict):
        found["prompts"] = {k: v for k, v in found["prompts"].items() if v}
    return {k: v for k, v in found.items() if v is not None and v != {}}


def _text_settings(obj: Any) -> dict[str, Any]:
    """A sentence-transformers object's maximum length and lower-casing, where it has them: each changes the
    vectors, and the print of sentence-transformers 6 shows neither (``obj.max_seq_length = 16`` kept the key, and the
    256-token vectors were served)."""
    try:
        found = {"max_seq_length": getattr(obj, "max_seq_length", None), "do_lower_case": getattr(obj[0], "do_lower_case", None)}
    except (TypeError, IndexError, KeyError, AttributeError):  # no first module: only what the object has itself
        found = {"max_seq_length": getattr(obj, "max_seq_length", None)}
    return {k: v for k, v in found.items() if isinstance(v, (int, bool))}


def object_name(obj: Any) -> str:
    """A display name: a sentence-transformers model's card name or folder, else the class name."""
    card = getattr(obj, "model_card_data", None)
    for candidate in (getattr(card, "model_name", None), getattr(card, "base_model", None),
                      getattr(obj, "name_or_path", None), getattr(obj, "name", None)):
        if isinstance(candidate, str) and candidate:
            return Path(candidate).name if Path(candidate).is_absolute() else candidate  # a folder: its name only
    return type(obj).__name__


class ForeignEncoder(SentenceEncode):
    """An object with ``encode(texts, **kwargs) -> array`` behind the :class:`~embench.encoding.encoder_interface.Encoder` interface."""

    def __init__(self, obj: Any, *, name: str | None = None, fingerprint: str | None = None):
        if not has_encode(obj):
            raise EmbenchError(f"{type(obj).__name__} has no encode() method: give a model name or folder, "
                               "an embench encoder (load_model), or an object with encode(texts) -> array")
        self.obj = obj
        self.name = name or object_name(obj)
        self.fingerprint = fingerprint or object_fingerprint(obj)
        self.reusable = self.fingerprint is not None  # cache and stored records only for a known state
        params = inspect.signature(obj.encode).parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        self._batch_kw = "batch_size" in params or takes_any
        self._extra = {k: v for k, v in ST_KEYWORDS.items() if k in params or takes_any}

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        """Lengths that order the batches: the object's tokenizer when it has one, else whitespace words."""
        tok = getattr(self.obj, "tokenizer", None)
        if callable(tok):
            ids = tok(list(texts), truncation=True)["input_ids"]
            return np.fromiter(map(len, ids), dtype=np.int64, count=len(texts))
        return np.fromiter((len(t.split()) for t in texts), dtype=np.int64, count=len(texts))

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        kwargs = dict(self._extra)
        if self._batch_kw:
            kwargs["batch_size"] = len(texts)
        out = self.obj.encode(list(texts), **kwargs)
        if hasattr(out, "detach"):  # a torch tensor
            out = out.detach().float().cpu().numpy()
        arr = np.asarray(out, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[0] != len(texts):
            raise EmbenchError(f"{self.name}.encode() returned shape {arr.shape} for {len(texts)} texts; "
                               "expected one vector per text, (n, dim)")
        return arr

    def cache_key(self) -> str:
        if self.fingerprint is None:
            raise EmbenchError(f"{self.name}: no fingerprint of its state, so its vectors cannot be cached; "
                               "pass fingerprint=... (anything that changes when the model does)")
        return stable_hash({"foreign": self.name, "fingerprint": self.fingerprint}, 24)

    def describe(self) -> dict[str, Any]:
        cls = type(self.obj)
        return {"name": self.name, "source": f"python object {cls.__module__}.{cls.__qualname__}",
                "fingerprint": self.fingerprint, "pooling": "the object's own", "normalize": None}
