"""sentence-transformers' ``encode()`` arguments as embench's model objects answer them (:mod:`.st_face`).

sentence-transformers 6 takes ``encode(inputs, prompt_name=None, prompt=None, batch_size=32, ...)``: code written
for it passes a prompt by position (``model.encode(texts, "query")``), so embench's ``encode`` takes them in that
order. Prompts follow ``SentenceTransformer._resolve_prompt``: ``prompt`` (a literal prefix, ``prompt + text``;
``""`` for none) wins over ``prompt_name``; a ``prompt_name`` is one of the model's prompts, where every model has
``query`` and ``document`` (empty, as sentence-transformers gives each model); neither keeps the prompt the model
was loaded with. The prompt is applied by an encoder of the same weights under that template (the model's own
``with_prompt``, :class:`embench.models.prompts.PromptViews`): another cache key per prompt, so no prompt is
ever served another's vectors. The arguments embench cannot honour are refused, each with what to do instead.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import EmbenchError
from ..core.registry import nearest

OURS = ("prompt_name", "prompt", "batch_size", "show_progress_bar", "convert_to_numpy", "convert_to_tensor",
        "normalize_embeddings", "normalize", "show_progress", "use_cache", "cache_dir")
ST_EMPTY = {"query": "", "document": ""}  # sentence-transformers' _default_prompts: on every model, empty unless set
ELSEWHERE = {  # what a refused sentence-transformers argument is, here
    "truncate_dim": "slice the vectors (vectors[:, :dim]) and normalise them again; evaluate(..., truncate_dim=) "
                    "scores truncated vectors",
    "pool": "the engine encodes on the model's own device (load_model(device=...)); there is no multi-process pool",
    "chunk_size": "the engine encodes on the model's own device (load_model(device=...)); there is no multi-process pool",
}


def st_texts(texts: Any, options: dict[str, Any], call: str) -> Any:
    """The texts, given by position or as sentence-transformers' ``inputs=`` (6.x) or ``sentences=`` (earlier)."""
    given = [k for k in ("inputs", "sentences") if k in options]
    if not given:
        return texts
    if texts is not None or len(given) > 1:
        raise EmbenchError(f"{call} got the texts twice ({', '.join(['texts', *given][-2:])}); give them once")
    return options.pop(given[0])


def same_device(asked: Any, own: Any) -> bool:
    """Whether ``asked`` (``encode(device=...)``) names the device ``own`` the model is on: ``cuda`` is ``cuda:0`` when
    that is the current device (torch's meaning of an index-less device); an unknown or unparsable one is not."""
    import torch

    try:
        a, b = torch.device(asked), torch.device(own)
    except (RuntimeError, TypeError, ValueError):
        return False
    if a.type != b.type or a.index == b.index:
        return a.type == b.type
    if a.index is not None and b.index is not None:
        return False
    current = torch.cuda.current_device() if a.type == "cuda" and torch.cuda.is_available() else 0  # asked only here
    return (current if a.index is None else a.index) == (current if b.index is None else b.index)


def refuse_unsupported(options: dict[str, Any], call: str, own_device: Any = None) -> None:
    """Refuse what embench cannot honour, each named with what to do instead: a sentence-transformers argument set to
    other than its default (``device`` other than the model's own ``own_device``, ``precision``, ``output_value``,
    ``truncate_dim``, ``pool``, ``chunk_size``), and any option ``encode()`` does not have."""
    for name, value in options.items():
        if name == "device" and value is not None and own_device is not None and same_device(value, own_device):
            continue  # the model's own device (code written for sentence-transformers passes it): nothing to change
        if name in ("device", "precision") and value not in (None, "float32"):
            raise EmbenchError(f"{call.removesuffix('()')}({name}={value!r}): the {name} is the model's; give it to "
                               f"load_model({'device' if name == 'device' else 'dtype'}=...) instead")
        if name == "output_value" and value not in (None, "sentence_embedding"):  # it returned sentence vectors
            raise EmbenchError(f"{call.removesuffix('()')}(output_value={value!r}): encode gives sentence vectors only; "
                               "per-token states are read by the analyses (embench analyze token-dependency, attention)")
        if name in ELSEWHERE and value is not None:
            raise EmbenchError(f"{call.removesuffix('()')}({name}={value!r}) is not taken here: {ELSEWHERE[name]}")
        if name not in ("device", "precision", "output_value", *ELSEWHERE):
            close = nearest(name, list(OURS))
            hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
            raise EmbenchError(f"{call} got an unexpected option {name!r}{hint}; it takes {', '.join(OURS)}")


def model_prompts(encoder: Any) -> dict[str, str]:
    """The prompts ``prompt_name`` picks from, as sentence-transformers has them: the model's, and empty ``query`` and
    ``document`` where it has none of those names."""
    own = getattr(getattr(encoder, "prompt_set", None), "prompts", None) or {}
    return {**ST_EMPTY, **own}


def prompted_encoder(encoder: Any, prompt_name: Any, prompt: Any, call: str) -> Any:
    """``encoder`` under sentence-transformers' prompt arguments: ``prompt`` (a prefix) over ``prompt_name``; the
    encoder itself when neither is given."""
    for name, value in (("prompt_name", prompt_name), ("prompt", prompt)):
        if value is not None and not isinstance(value, str):
            what = "the name of one of the model's prompts" if name == "prompt_name" else "a prefix for every text"
            raise EmbenchError(f"{call}: {name} must be {what} (a string), not {type(value).__name__} {value!r}")
    if prompt is None and prompt_name is None:
        return encoder
    with_prompt = getattr(encoder, "with_prompt", None)
    if with_prompt is None:  # an ensemble, or an object embench wraps: it applies its own prompts, if any
        raise EmbenchError(f"{call}: {getattr(encoder, 'name', 'this model')} takes no prompt_name or prompt here (an "
                           "ensemble or a wrapped object); put the prefix before each text yourself")
    if prompt is not None:  # sentence-transformers: prompt wins, prompt_name is ignored
        return with_prompt(None, prompt)
    prompts = model_prompts(encoder)
    if prompt_name not in prompts:
        close = nearest(prompt_name, list(prompts))
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        named = ", ".join(sorted(k for k, v in prompts.items() if v)) or "none with text"
        empty = sorted(k for k, v in prompts.items() if not v)
        raise EmbenchError(f"{call}: prompt_name={prompt_name!r} is not one of {encoder.name}'s prompts.{hint} Its "
                           f"prompts: {named}" + (f" ({', '.join(empty)}: empty, the text as it is)" if empty else ""))
    return with_prompt(prompt_name, prompts[prompt_name])


def side_prompt(encoder: Any, side: str) -> tuple[str | None, str | None]:
    """``encode_query``'s or ``encode_document``'s (prompt_name, prompt) when the call gives neither: the model's prompt
    for the side as a retrieval run picks it (``query``; ``document``, then ``passage``, ``corpus``:
    :meth:`embench.models.prompts.PromptSet.choose`), ``(None, "")`` for the text as it is, ``(None, None)`` for the
    prompt as loaded (a model without named prompts, or one loaded with a prompt fixed for every text)."""
    prompts = getattr(encoder, "prompt_set", None)
    chosen = prompts.choose(side=side) if prompts is not None else None
    if chosen is None:
        return None, None
    name, prefix = chosen
    return (name, None) if name else (None, prefix)
