"""The encoder mteb calls: every text goes through embench's engine, so one embedding cache serves all suites.

mteb's evaluators hand an encoder a ``DataLoader`` of batches (``batch["text"]``) and expect an array
back (``mteb.models.EncoderProtocol``). This adapter collects the texts and asks the ``embed``
callable a task receives (``Engine.embed``: dedup, token-length batching, disk cache), so a text
already encoded for ``sts-all`` with the same model, pooling and text is read from the cache, not
encoded again. The adapter never sees the model itself; it only sees ``embed``.

Similarity is mteb's own cosine (``mteb.similarity_functions``) unless the protocol asks for
``dot``; mteb's evaluators call ``similarity``/``similarity_pairwise`` through this object. Where a task's main
score never calls it (:func:`main_score_reads_similarity`), the task is given cosine whatever was asked.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import numpy as np

from ...core.errors import EmbenchError
from ...core.hashing import stable_hash
from ...encoding.vector_axes import suffix
from ...evaluation.results import IDENTITY_ENCODER_FIELDS, IDENTITY_OPTIONAL_FIELDS, slug
from ..base import Embed

MTEB_SEED = 42  # mteb's default task seed (classification undersampling); published numbers use it


def model_meta(name: str = "embench/encoder", revision: str | None = None, similarity: str = "cosine", **fields: Any):
    """An mteb ``ModelMeta`` naming the embench model (mteb files results under name/revision); ``fields`` are
    other ``ModelMeta`` fields (``embed_dim``, ``loader_kwargs``)."""
    from mteb.models import ModelMeta
    from mteb.models.model_meta import ScoringFunction

    fn = ScoringFunction.DOT_PRODUCT if similarity == "dot" else ScoringFunction.COSINE
    if "/" not in name:
        name = f"embench/{name}"  # mteb expects "organisation/model"
    return ModelMeta.create_empty({"name": name, "revision": revision or "no_revision_available", "similarity_fn_name": fn,
                                   "framework": ["PyTorch"], **fields})


# mteb task types whose main score is a classifier's, a regressor's or k-means' fitted on the vectors themselves
FITTED_TYPES = frozenset({"Classification", "MultilabelClassification", "Regression", "Clustering"})


def main_score_reads_similarity(metadata: Any) -> bool:
    """Whether mteb's main score of a task (its ``TaskMetadata``) is computed with the model's similarity: retrieval's,
    reranking's, bitext mining's... are; STS's and summarisation's ``cosine_*`` are cosine whatever the model's, pair
    classification's ``max_*`` the best over cosine, dot, euclidean, manhattan and the model's own (one of the first
    two), and classification's and clustering's read the vectors only (mteb 2's evaluators)."""
    best_of_all = metadata.type == "PairClassification" and metadata.main_score.startswith("max_")
    return not (metadata.main_score.startswith("cosine_") or best_of_all or metadata.type in FITTED_TYPES)


class EngineEncoder:
    """An ``mteb.models.EncoderProtocol`` backed by an embench ``embed`` callable.

    >>> enc = EngineEncoder(engine.embed)                        # doctest: +SKIP
    >>> mteb.evaluate(enc, mteb.get_task("STS12"), cache=None)  # doctest: +SKIP
    """

    def __init__(self, embed: Embed, *, similarity: str = "cosine", name: str = "embench/encoder", revision: str | None = None):
        self.embed = embed
        self.asks_prompts = _takes_prompt(embed)  # Engine.embed does: queries and documents get their prompts
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
        if self.asks_prompts and task_metadata is not None:
            return self.embed(texts, prompt=prompt_request(task_metadata, prompt_type))
        return self.embed(texts)

    def similarity(self, embeddings1, embeddings2):
        from mteb.similarity_functions import cos_sim, dot_score

        return dot_score(embeddings1, embeddings2) if self.similarity_name == "dot" else cos_sim(embeddings1, embeddings2)

    def similarity_pairwise(self, embeddings1, embeddings2):
        from mteb.similarity_functions import pairwise_cos_sim, pairwise_dot_score

        if self.similarity_name == "dot":
            return pairwise_dot_score(embeddings1, embeddings2)
        return pairwise_cos_sim(embeddings1, embeddings2)


def prompt_request(task_metadata: Any, prompt_type: Any) -> dict[str, str | None]:
    """What a task asks of the model's prompts (:meth:`embench.models.prompts.PromptSet.choose`): the side
    (mteb's ``PromptType``: query or document; None in symmetric tasks), the task's name and type, and its
    instruction for instruction models, found as mteb finds it (``AbsEncoder.get_instruction``: the task
    metadata's prompt, else its task class's); documents get no instruction."""
    from types import SimpleNamespace

    from mteb.models.abs_encoder import AbsEncoder

    side = getattr(prompt_type, "value", prompt_type)
    instruction = None
    if side != "document":
        plain = SimpleNamespace(prompts_dict=None, prompt_priority=AbsEncoder.prompt_priority)
        found = AbsEncoder.get_instruction(plain, task_metadata, prompt_type)
        instruction = found if isinstance(found, str) and found else None
    return {"side": side, "task": task_metadata.name, "task_type": task_metadata.type, "instruction": instruction}


def _takes_prompt(embed: Embed) -> bool:
    try:
        return "prompt" in inspect.signature(embed).parameters
    except (TypeError, ValueError):  # a callable without a signature
        return False


_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # one plain path part (not '.', '..' or hidden)


# the folders embench train writes, named alike in every run: seed-2/best of one run is not best of another
_RUN_PARTS = re.compile(r"best|checkpoint-last|checkpoints|step-\d+|seed-\d+|tower-\d+")


def folder_name(path: str) -> str:
    """A local model folder's name for mteb: its last part, led by its parents up to the first that is not one of
    ``embench train``'s own folders (``runs/simcse/seed-2/best``: ``simcse-seed-2-best``, not ``best``)."""
    parts = [p for p in path.split("/") if p not in ("", ".", "..", "~")]
    kept: list[str] = []
    while parts:
        kept.insert(0, parts.pop())
        if not _RUN_PARTS.fullmatch(kept[0]):
            break
    return "-".join(kept)


def mteb_model_name(record_model: str, encoder: dict | None = None) -> str:
    """The name mteb files a model under: the hub id for a known alias or an ``org/name`` id, else
    ``embench/<name>`` (a local folder: its last part, wherever it was). A record's vector axis (``(dim 128, int8)``
    after the name: ``encoder``'s truncate_dim and quantize) is not part of it: the checkpoint is the same, and the
    revision's hash (:func:`mteb_revision`) keeps each configuration apart."""
    from ...models.aliases import ALIASES, HUB_IDS

    name = record_model.removesuffix(suffix(encoder or {}))
    if name in HUB_IDS:
        return HUB_IDS[name]
    if name in ALIASES and ALIASES.canonical(name) in HUB_IDS:  # the hub id of an installed copy, its source a folder
        return HUB_IDS[ALIASES.canonical(name)]
    plain = name.rstrip("/\\").replace("\\", "/")
    if plain.startswith(("/", "~", "./", "../")) or plain.count("/") > 1 or read_from_folder(name, encoder or {}):
        return f"embench/{slug(folder_name(plain))}"  # a local folder: its name, not the path it had here
    if plain.count("/") == 1 and all(_SAFE.fullmatch(part) for part in plain.split("/")):
        return plain  # an org/name hub id: mteb's own folder name for it
    return f"embench/{slug(name)}"


def read_from_folder(name: str, encoder: dict) -> bool:
    """Whether the record's weights were read from a local folder rather than a copy of the hub id ``name`` (``org/name``
    reads as either). The record's ``source`` says, wherever the export runs: a hub copy is the hub cache's snapshot
    (``models--org--name/snapshots/<revision>``) or embench's model folder's (``models/local_models.py``). Asking
    whether ``name`` exists from the export's working folder filed ``-m runs/tiny`` (a local folder) as the hub id
    ``runs/tiny`` when exported from another folder. A record with no folder as its source (an in-memory
    module, a record from before sources were kept) falls back to whether ``name`` is a folder here."""
    from ...models.local_models import candidates

    source = str(encoder.get("source") or "")
    if not Path(source).is_absolute():
        return Path(name).expanduser().exists()
    parts = Path(source).parts
    if "snapshots" in parts and any(part.startswith("models--") for part in parts):
        return False
    return Path(source) not in {c.expanduser().resolve() for c in candidates(name)}


def mteb_revision(record) -> str:
    """The weights fingerprint plus a hash of the encoder configuration and protocol.

    mteb keeps one file per (model, revision, task); two embench configurations of one checkpoint
    (e.g. normalised and unnormalised embeddings) must not overwrite each other.
    """
    enc = record.encoder or {}
    ident = {k: enc.get(k) for k in IDENTITY_ENCODER_FIELDS}
    ident.update({k: enc[k] for k in IDENTITY_OPTIONAL_FIELDS if enc.get(k)})  # as record_key: set ones only
    config = stable_hash({"encoder": ident, "protocol": revision_protocol(record)}, 8)
    # a record's revision becomes a folder name: anything but plain characters (a '../' in an edited record)
    # is replaced, so an export never writes outside its folder
    base = re.sub(r"[^A-Za-z0-9._-]", "_", str(model_revision(record) or enc.get("fingerprint") or "unknown")).lstrip(".")
    return f"{base or 'unknown'}-{config}"


def revision_protocol(record) -> dict[str, Any]:
    """A record's protocol as its revision hashes it: the seed counted from its task's own default, so that the records
    of a run left at the defaults share one folder whatever their kind. An MTEB task runs mteb's 42 unless a seed is
    given, where every other task's default is 1111: its 42 hashes as 1111, and an explicit 1111 on it as 42 (these
    are the folders such records had when an MTEB record named 1111 for the 42 it ran)."""
    from ...evaluation.protocols import EvalProtocol

    protocol, base = dict(record.protocol or {}), EvalProtocol().seed
    if getattr(record, "kind", None) == "mteb" and protocol.get("seed") in (MTEB_SEED, base):
        protocol["seed"] = base if protocol["seed"] == MTEB_SEED else MTEB_SEED
    return protocol


def model_revision(record) -> str | None:
    """The checkpoint revision a record names: its encoder's, else its provenance's; None for a local folder."""
    prov = getattr(record, "provenance", None) or {}
    return (record.encoder or {}).get("revision") or prov.get("model_revision") or None


LOADER_FIELDS = ("pooling", "layer", "max_length", "dtype", "normalize", "lowercase", "prompt", *IDENTITY_OPTIONAL_FIELDS)


def records_model_meta(records):
    """The ``ModelMeta`` of records filed under one mteb name and revision (one encoder configuration and
    protocol): the revision, the embedding size any of them stored, the protocol's similarity, and the
    encoder settings behind the revision's hash as ``loader_kwargs``."""
    first = records[0]
    enc = first.encoder or {}
    dim = next((d for r in records if isinstance(d := (r.provenance or {}).get("embedding_dim"), int)), None)
    settings = {k: enc[k] for k in LOADER_FIELDS if enc.get(k) not in (None, "")}
    if model_revision(first):
        settings["revision"] = model_revision(first)
    return model_meta(mteb_model_name(first.model, first.encoder), mteb_revision(first), (first.protocol or {}).get("similarity", "cosine"),
                      embed_dim=dim, loader_kwargs=settings)


def save_inside(cache, output, result, meta, what: str):
    """``cache.save_to_cache(result, meta)`` after checking the file lands inside ``output``; its path."""
    from pathlib import Path

    target = Path(cache.get_task_result_path(task_name=result.task_name, model_name=meta))
    if not target.resolve().is_relative_to(Path(output).resolve()):  # the names keep it inside; checked all the same
        raise EmbenchError(f"{what}: its mteb result would be written to {target.resolve()}, outside {output}; refused")
    cache.save_to_cache(result, meta)
    return target


def export_records(records, output) -> list:
    """Write the mteb results kept in embench records in mteb's own layout (``mteb.ResultCache``).

    Files land in ``<output>/results/<model>/<revision>/<Task>.json`` with ``model_meta.json``, so
    ``mteb.ResultCache(output).load_results(...)`` and mteb's leaderboard tooling read them.
    Records without an mteb result (embench's own tasks) are skipped: ``embench results export`` writes those too.
    """
    from pathlib import Path

    from mteb.cache import ResultCache
    from mteb.results import TaskResult

    cache = ResultCache(Path(output))
    return [save_inside(cache, output, TaskResult.from_dict(r.scores["mteb_result"]), records_model_meta([r]), f"{r.model} {r.task}")
            for r in records if (r.scores or {}).get("mteb_result") is not None]
