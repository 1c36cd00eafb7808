"""``model.encode(texts)`` in the shape sentence-transformers gives it, on every embench model object.

Researchers call ``SentenceTransformer.encode`` out of habit; the object :func:`embench.load_model`
returns answers the same call, and goes through the engine: texts deduplicated, sorted by token length,
and looked up in (and added to) the embedding cache, so a second call over the same texts costs nothing.
sentence-transformers' arguments are taken in its order (``inputs, prompt_name, prompt, batch_size,
show_progress_bar, output_value, precision, convert_to_numpy, convert_to_tensor, device, normalize_embeddings``)
and answered as it answers them, its prompts included (:mod:`.st_arguments`), as are ``encode_query`` and
``encode_document``, so code written for it runs unchanged; what embench cannot honour (another ``device`` or
``precision``, token embeddings, ``truncate_dim``, a multi-process ``pool``) is refused, saying what to do instead.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.arguments import truth, whole_number
from ..core.errors import EmbenchError
from ..core.surrogates import surrogate_problem
from .cache import default_cache_dir
from .engine import Engine
from .st_arguments import prompted_encoder, refuse_unsupported, side_prompt, st_texts


def progress_default(show_progress: bool | None) -> bool:
    """Progress on when asked, else when someone is watching (stderr is a terminal), as in an interactive session."""
    return sys.stderr.isatty() if show_progress is None else bool(show_progress)


def text_list(texts: Any, call: str = "encode()") -> list[str]:
    """``texts`` as a list of strings (one ``str`` is a list of one, not of its letters): a dict (whose keys would be
    encoded), an item that is no string (None, a number, bytes, a list of words) or a string UTF-8 cannot hold (a lone
    surrogate) is an error naming ``call`` and the item's index, not an AttributeError or UnicodeEncodeError inside
    the cache or the tokenizers library's TypeError."""
    if isinstance(texts, str):
        return [texts]
    if isinstance(texts, dict | bytes) or not hasattr(texts, "__iter__"):
        raise EmbenchError(f"{call} takes a text or a list of texts, not {type(texts).__name__}")
    batch = list(texts)
    for i, t in enumerate(batch):
        if not isinstance(t, str):
            raise EmbenchError(f"{call}: text {i} is {type(t).__name__} {t!r}, not a string")
        problem = surrogate_problem(t)
        if problem is not None:
            raise EmbenchError(f"{call}: text {i} ({t[:60]!r}) {problem}")
    return batch


class SentenceEncode:
    """Adds :meth:`encode`, :meth:`encode_query` and :meth:`encode_document` to an encoder (anything the engine takes:
    ``encode_batch``, ``cache_key``, ``name``; ``with_prompt`` and ``prompt_set`` for prompts)."""

    def encode(
        self,
        texts: str | Sequence[str] | None = None,
        prompt_name: str | None = None,
        prompt: str | None = None,
        batch_size: int | None = None,
        show_progress_bar: bool | None = None,
        output_value: str | None = "sentence_embedding",
        precision: str = "float32",
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        device: str | None = None,
        normalize_embeddings: bool | None = None,
        *,
        normalize: bool | None = None,
        show_progress: bool | None = None,
        use_cache: bool = True,
        cache_dir: str | Path | None = None,
        **st_kwargs: Any,
    ) -> Any:
        """Vectors of ``texts`` as a float32 array (n, dim); one text (a ``str``) gives one vector (dim,).

        >>> model = load_model("all-MiniLM-L6-v2")          # doctest: +SKIP
        >>> model.encode(["A man plays a guitar."]).shape    # doctest: +SKIP
        (1, 384)

        The positional order is sentence-transformers': ``model.encode(texts, "query")`` names a prompt.
        ``prompt_name`` is one of the model's prompts (``config_sentence_transformers.json``'s, or a catalogue
        row's; ``query`` and ``document`` are empty where it has none), ``prompt`` a prefix put before every text
        (``prompt + text``; ``""`` for none) and wins over ``prompt_name``; a Pooling saved with
        ``include_prompt: false`` leaves the prompt's tokens out, as there. Without either, the prompt the model was
        loaded with (its default prompt, ``load_model(prompt=...)``) applies. Each prompt is cached apart.
        ``normalize=True`` (or ``normalize_embeddings``) L2-normalises the vectors; ``None`` or ``False`` leaves them
        as the model gives them (a model whose pipeline ends in a normalisation, as all-MiniLM-L6-v2's does, stays
        normalised, as with sentence-transformers). ``show_progress`` (or ``show_progress_bar``) defaults to on
        when stderr is a terminal. The cache is ``cache_dir`` (default ``$EMBENCH_CACHE``, then
        ``~/.cache/embench/embeddings``); ``use_cache=False`` neither reads nor writes it. As in
        sentence-transformers, ``convert_to_tensor`` returns one torch tensor, and ``convert_to_numpy=False``
        (without it) a list of tensors, one per text (one text: its tensor). Its ``device``, ``precision`` and
        ``output_value`` are not options here (the device and dtype are the model's, set in ``load_model``): given
        with a value other than the default (for ``device``, other than the model's own) they are an error rather than
        silently ignored, as are ``truncate_dim``, ``pool`` and ``chunk_size``. ``normalize`` is True, False or None.
        """
        texts = st_texts(texts, st_kwargs, "encode()")
        refuse_unsupported({**st_kwargs, "device": device, "precision": precision, "output_value": output_value},
                           "encode()", getattr(self, "device", None))  # an ensemble or wrapped object: none to match
        # sentence-transformers' spellings; a string such as "no" was true (normalised), as evaluate(normalize=) refuses
        normalize = truth(normalize_embeddings, "normalize_embeddings") if normalize is None else truth(normalize, "normalize")
        show_progress = show_progress_bar if show_progress is None else show_progress
        whole_number(batch_size, "encode(): batch_size")  # in Python's spelling: not the CLI's --batch-size
        single = isinstance(texts, str)
        batch = text_list(texts)
        encoder = prompted_encoder(self, prompt_name, prompt, "encode()")  # this model, or its view under a prompt
        if not getattr(encoder, "reusable", True):  # an object embench cannot fingerprint: nothing cached
            use_cache = False
        cache = (Path(cache_dir) if cache_dir is not None else default_cache_dir()) if use_cache else None
        engine = Engine(encoder, batch_size=batch_size, cache_dir=cache, progress=progress_default(show_progress))
        if hasattr(encoder, "use_engines"):  # an ensemble: each member once through its own engine and cache
            encoder.use_engines(lambda member: Engine(member, batch_size=batch_size, cache_dir=cache))
        vectors = (engine.embed(batch) if batch else encoder.encode_batch([])).astype(np.float32, copy=False)  # (0, dim)
        if normalize:
            vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        out = vectors[0] if single else vectors
        if convert_to_tensor or not convert_to_numpy:
            import torch

            tensor = torch.from_numpy(np.ascontiguousarray(out))
            # sentence-transformers: convert_to_tensor wins; convert_to_numpy=False alone gives a tensor per text
            return tensor if convert_to_tensor or single else list(tensor)
        return out

    def encode_query(self, texts: str | Sequence[str] | None = None, prompt_name: str | None = None,
                     prompt: str | None = None, *args: Any, **kwargs: Any) -> Any:
        """:meth:`encode` for queries, as ``SentenceTransformer.encode_query``: without ``prompt_name`` or ``prompt``,
        the model's ``query`` prompt, and the text as it is where its prompts have none (a model without named prompts,
        or loaded with one prompt fixed for every text, keeps the prompt it was loaded with: :func:`.side_prompt`)."""
        if prompt_name is None and prompt is None:
            prompt_name, prompt = side_prompt(self, "query")
        return self.encode(texts, prompt_name, prompt, *args, **kwargs)

    def encode_document(self, texts: str | Sequence[str] | None = None, prompt_name: str | None = None,
                        prompt: str | None = None, *args: Any, **kwargs: Any) -> Any:
        """:meth:`encode` for documents, as ``SentenceTransformer.encode_document``: without ``prompt_name`` or
        ``prompt``, the model's ``document`` prompt, else ``passage``, else ``corpus`` (the first with text: a
        folder sentence-transformers 6 saved holds an empty ``document``, and its own encode_document stops there),
        and the text as it is where its prompts have none of them (otherwise as :meth:`encode_query`)."""
        if prompt_name is None and prompt is None:
            prompt_name, prompt = side_prompt(self, "document")
        return self.encode(texts, prompt_name, prompt, *args, **kwargs)
