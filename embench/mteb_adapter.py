"""The encoder mteb calls: every text goes through embench's engine, so one embedding cache serves all suites.

mteb's evaluators hand an encoder a ``DataLoader`` of batches (``batch["text"]``) and expect an array
back (``mteb.models.EncoderProtocol``). This adapter collects the texts and asks the ``embed``
callable a task receives (``Engine.embed``: dedup, token-length batching, disk cache), so a text
already encoded for ``sts-all`` with the same model, pooling and text is read from the cache, not
encoded again. The adapter never sees the model itself; it only sees ``embed``.

Similarity is mteb's own cosine (``mteb.similarity_functions``) unless the protocol asks for
``dot``; mteb's evaluators call ``similarity``/``similarity_pairwise`` through this object.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Embed = Callable[[list[str]], np.ndarray]


def model_meta(name: str = "embench/encoder", revision: str | None = None, similarity: str = "cosine"):
    """An mteb ``ModelMeta`` naming the embench model (mteb files results under name/revision)."""
    from mteb.models import ModelMeta
    from mteb.models.model_meta import ScoringFunction

    fn = ScoringFunction.DOT_PRODUCT if similarity == "dot" else ScoringFunction.COSINE
    if "/" not in name:
        name = f"embench/{name}"  # mteb expects "organisation/model"
    return ModelMeta.create_empty(
        {"name": name, "revision": revision or "no_revision_available", "similarity_fn_name": fn, "framework": ["PyTorch"]}
    )


class EngineEncoder:
    """An ``mteb.models.EncoderProtocol`` backed by an embench ``embed`` callable.

    >>> enc = EngineEncoder(engine.embed)                        # doctest: +SKIP
    >>> mteb.evaluate(enc, mteb.get_task("STS12"), cache=None)  # doctest: +SKIP
    """

    def __init__(self, embed: Embed, *, similarity: str = "cosine", name: str = "embench/encoder", revision: str | None = None):
        self.embed = embed
        self.similarity_name = similarity
        self.mteb_model_meta = model_meta(name, revision, similarity)
        self.texts_requested = 0

    def encode(self, inputs, *, task_metadata=None, hf_split=None, hf_subset=None, prompt_type=None, **kwargs: Any) -> np.ndarray:
        texts: list[str] = []
        for batch in inputs:
            if "text" not in batch:
                from .errors import EmbenchError

                raise EmbenchError(
                    f"mteb task {getattr(task_metadata, 'name', '?')} passed inputs without a 'text' field "
                    f"(fields: {sorted(batch)}); embench encodes text only"
                )
            texts.extend(str(t) for t in batch["text"])
        self.texts_requested += len(texts)
        return self.embed(texts)

    def similarity(self, embeddings1, embeddings2):
        from mteb.similarity_functions import cos_sim, dot_score

        return dot_score(embeddings1, embeddings2) if self.similarity_name == "dot" else cos_sim(embeddings1, embeddings2)

    def similarity_pairwise(self, embeddings1, embeddings2):
        from mteb.similarity_functions import pairwise_cos_sim, pairwise_dot_score

        if self.similarity_name == "dot":
            return pairwise_dot_score(embeddings1, embeddings2)
        return pairwise_cos_sim(embeddings1, embeddings2)
