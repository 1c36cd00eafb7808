"""A side's or a task's prompt: the engine of the same model under another prompt.

Retrieval and reranking tasks encode queries and documents with different prompts (E5's ``query: `` and
``passage: ``, BGE's query instruction, nomic's ``search_query: ``/``search_document: ``). A task asks for
a side through ``Engine.embed(texts, prompt={"side": "query", "task": ..., "task_type": ...,
"instruction": ...})`` (the MTEB bridge does, from mteb's ``prompt_type``); the encoder's prompt set says
which prompt that is (:meth:`embench.models.prompts.PromptSet.choose`). The answer is an encoder sharing
the weights under another template, so another cache key: its engine is made once per engine and prompt,
and counts into the parent's statistics (the record's ``texts_encoded`` and ``texts_from_cache``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def prompted_engine(engine: Any, request: Mapping[str, str | None]) -> Any:
    """``engine`` itself when its encoder has no other prompt for ``request``, else the engine of that prompt."""
    prompts = getattr(engine.encoder, "prompt_set", None)
    if prompts is None:  # no named prompts (or an encoder without them: an ensemble, an object with encode())
        return engine
    encoder = prompts.encoder_for(engine.encoder, dict(request))
    if encoder is engine.encoder:
        return engine
    children = engine.__dict__.setdefault("_prompted", {})
    key = encoder.cache_key()
    if key not in children:
        cache = engine.cache.root if engine.cache is not None else None
        child = type(engine)(encoder, batch_size=engine.batch_size, batch_tokens=engine.batch_tokens or 0,
                             cache_dir=cache, progress=engine.progress)
        child.stats = engine.stats  # one run's counts, whichever prompt encoded a text
        children[key] = child
    return children[key]


def shared_pass_texts(encoder: Any, prepared: Any) -> Any:
    """The texts of a prepared task to encode in a run's one shared pass under the encoder's own prompt: none of
    an MTEB task's when the model has prompts to choose per task or side, since mteb asks for those texts under
    the chosen prompts (through :func:`prompted_engine`) and vectors of the loaded prompt would go unused."""
    prompts = getattr(encoder, "prompt_set", None)
    choosing = prompts is not None and not prompts.fixed and bool(prompts.named() or prompts.instruction)
    return [] if choosing and "mteb_task" in prepared.meta else prepared.texts
