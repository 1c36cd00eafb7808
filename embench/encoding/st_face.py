"""``model.encode(texts)`` in the shape sentence-transformers gives it, on every embench model object.

Researchers call ``SentenceTransformer.encode`` out of habit; the object :func:`embench.load_model`
returns answers the same call, and goes through the engine: texts deduplicated, sorted by token length,
and looked up in (and added to) the embedding cache, so a second call over the same texts costs nothing.
The sentence-transformers spellings of the keyword arguments (``show_progress_bar``,
``normalize_embeddings``, ``convert_to_tensor``, ``convert_to_numpy``) are accepted and answered as it answers
them, so code written for it runs unchanged.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import EmbenchError
from .cache import default_cache_dir
from .engine import Engine

IGNORED = {"device", "precision", "output_value"}  # see encode(): what each means here


def progress_default(show_progress: bool | None) -> bool:
    """Progress on when asked, else when someone is watching (stderr is a terminal), as in an interactive session."""
    return sys.stderr.isatty() if show_progress is None else bool(show_progress)


def text_list(texts: Any, call: str = "encode()") -> list[str]:
    """``texts`` as a list of strings (one ``str`` is a list of one, not of its letters): a dict (whose keys would be
    encoded) or an item that is no string (None, a number, bytes, a list of words) is an error naming ``call`` and
    the item's index, not an AttributeError inside the cache or the tokenizers library's TypeError."""
    if isinstance(texts, str):
        return [texts]
    if isinstance(texts, dict | bytes) or not hasattr(texts, "__iter__"):
        raise EmbenchError(f"{call} takes a text or a list of texts, not {type(texts).__name__}")
    batch = list(texts)
    for i, t in enumerate(batch):
        if not isinstance(t, str):
            raise EmbenchError(f"{call}: text {i} is {type(t).__name__} {t!r}, not a string")
    return batch


class SentenceEncode:
    """Adds :meth:`encode` to an encoder (anything the engine takes: ``encode_batch``, ``cache_key``, ``name``)."""

    def encode(
        self,
        texts: str | Sequence[str],
        batch_size: int | None = None,
        *,
        normalize: bool | None = None,
        show_progress: bool | None = None,
        use_cache: bool = True,
        cache_dir: str | Path | None = None,
        convert_to_tensor: bool = False,
        convert_to_numpy: bool = True,
        **st_kwargs: Any,
    ) -> Any:
        """Vectors of ``texts`` as a float32 array (n, dim); one text (a ``str``) gives one vector (dim,).

        >>> model = load_model("all-MiniLM-L6-v2")          # doctest: +SKIP
        >>> model.encode(["A man plays a guitar."]).shape    # doctest: +SKIP
        (1, 384)

        ``normalize=True`` L2-normalises the vectors; ``None`` or ``False`` leaves them as the model gives
        them (a model whose pipeline ends in a normalisation, as all-MiniLM-L6-v2's does, stays normalised,
        as with sentence-transformers). ``show_progress`` defaults to on when stderr is a terminal.
        The cache is ``cache_dir`` (default ``$EMBENCH_CACHE``, then ``~/.cache/embench/embeddings``);
        ``use_cache=False`` neither reads nor writes it. As in sentence-transformers, ``convert_to_tensor``
        returns one torch tensor, and ``convert_to_numpy=False`` (without it) a list of tensors, one per text
        (one text: its tensor). sentence-transformers' ``show_progress_bar`` and ``normalize_embeddings`` are
        accepted for ours; its ``device``, ``precision`` and ``output_value`` are not options here (the
        device and dtype are the model's, set in ``load_model``): ``device``/``precision`` given with a value
        other than the default are an error rather than silently ignored.
        """
        # sentence-transformers' spellings stand in for ours when ours are not given
        st_normalize, st_progress = st_kwargs.pop("normalize_embeddings", None), st_kwargs.pop("show_progress_bar", None)
        normalize = st_normalize if normalize is None else normalize
        show_progress = st_progress if show_progress is None else show_progress
        for name in list(st_kwargs):
            if name not in IGNORED:
                raise EmbenchError(f"encode() got an unexpected option {name!r}; it takes batch_size, normalize, "
                                   "show_progress, use_cache, cache_dir, convert_to_tensor, convert_to_numpy")
            value = st_kwargs.pop(name)
            if name in ("device", "precision") and value not in (None, "float32"):
                raise EmbenchError(f"encode({name}={value!r}): the {name} is the model's; give it to "
                                   f"load_model({'device' if name == 'device' else 'dtype'}=...) instead")
            if name == "output_value" and value not in (None, "sentence_embedding"):  # it returned sentence vectors
                raise EmbenchError(f"encode(output_value={value!r}): encode gives sentence vectors only; per-token "
                                   "states are read by the analyses (embench analyze token-dependency, attention)")
        single = isinstance(texts, str)
        batch = text_list(texts)
        if not getattr(self, "reusable", True):  # an object embench cannot fingerprint: nothing cached
            use_cache = False
        cache = (Path(cache_dir) if cache_dir is not None else default_cache_dir()) if use_cache else None
        engine = Engine(self, batch_size=batch_size, cache_dir=cache, progress=progress_default(show_progress))  # type: ignore[arg-type]
        if hasattr(self, "use_engines"):  # an ensemble: each member once through its own engine and cache
            self.use_engines(lambda member: Engine(member, batch_size=batch_size, cache_dir=cache))
        vectors = (engine.embed(batch) if batch else self.encode_batch([])).astype(np.float32, copy=False)  # (0, dim)
        if normalize:
            vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        out = vectors[0] if single else vectors
        if convert_to_tensor or not convert_to_numpy:
            import torch

            tensor = torch.from_numpy(np.ascontiguousarray(out))
            # sentence-transformers: convert_to_tensor wins; convert_to_numpy=False alone gives a tensor per text
            return tensor if convert_to_tensor or single else list(tensor)
        return out
