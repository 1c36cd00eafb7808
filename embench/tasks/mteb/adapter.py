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

import re
from typing import Any

import numpy as np

from ...core.errors import EmbenchError
from ...core.hashing import stable_hash
from ...evaluation.results import IDENTITY_ENCODER_FIELDS, slug
from ..base import Embed


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


_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # one plain path part (not '.', '..' or hidden)


def mteb_model_name(record_model: str) -> str:
    """The name mteb files a model under: the hub id for a known alias, else ``embench/<name>``."""
    from ...models.aliases import HUB_IDS

    if record_model in HUB_IDS:
        return HUB_IDS[record_model]
    if record_model.count("/") == 1 and all(_SAFE.fullmatch(part) for part in record_model.split("/")):
        return record_model  # an org/name hub id: mteb's own folder name for it
    return f"embench/{slug(record_model)}"


def mteb_revision(record) -> str:
    """The weights fingerprint plus a hash of the encoder configuration and protocol.

    mteb keeps one file per (model, revision, task); two embench configurations of one checkpoint
    (e.g. normalised and unnormalised embeddings) must not overwrite each other.
    """
    enc = record.encoder or {}
    config = stable_hash({"encoder": {k: enc.get(k) for k in IDENTITY_ENCODER_FIELDS}, "protocol": record.protocol}, 8)
    # a record's revision becomes a folder name: anything but plain characters (a '../' in an edited record)
    # is replaced, so an export never writes outside its folder
    base = re.sub(r"[^A-Za-z0-9._-]", "_", str(enc.get("revision") or enc.get("fingerprint") or "unknown")).lstrip(".")
    return f"{base or 'unknown'}-{config}"


def export_records(records, output) -> list:
    """Write the mteb results kept in embench records in mteb's own layout (``mteb.ResultCache``).

    Files land in ``<output>/results/<model>/<revision>/<Task>.json`` with ``model_meta.json``, so
    ``mteb.ResultCache(output).load_results(...)`` and mteb's leaderboard tooling read them.
    Records without an mteb result (embench's own tasks) are skipped.
    """
    from pathlib import Path

    from mteb.cache import ResultCache
    from mteb.results import TaskResult

    cache = ResultCache(Path(output))
    written = []
    for r in records:
        raw = (r.scores or {}).get("mteb_result")
        if raw is None:
            continue
        result = TaskResult.from_dict(raw)
        meta = model_meta(mteb_model_name(r.model), mteb_revision(r),
                          (r.protocol or {}).get("similarity", "cosine"))
        target = Path(cache.get_task_result_path(task_name=result.task_name, model_name=meta)).resolve()
        if not target.is_relative_to(Path(output).resolve()):  # the names above keep it inside; checked all the same
            raise EmbenchError(f"{r.model} {r.task}: its mteb result would be written to {target}, outside {output}; refused")
        cache.save_to_cache(result, meta)
        written.append(cache.get_task_result_path(task_name=result.task_name, model_name=meta))
    return written
