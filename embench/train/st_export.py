"""The sentence-transformers side of a kept checkpoint, written by sentence-transformers' own ``save``.

The folder already holds the Hugging Face model and tokenizer (``AutoModel`` loads its root). Here the
same folder is loaded as sentence-transformers' ``Transformer`` module, the pooling (and its Dense and
Normalize modules) is added, and ``SentenceTransformer.save`` writes ``modules.json``,
``config_sentence_transformers.json`` (similarity function, prompts), ``sentence_bert_config.json`` and
the module folders beside the weights, as it does for its own models. ``SentenceTransformer(path)`` then
gives the vectors ``embench.load_model(path)`` gives.

How each embench pooler is written (the names: :mod:`embench.models.pooling_names`):

* ``cls`` with a pooler head (BERT's dense + tanh: supervised SimCSE's kept MLP): ``Pooling("cls")``
  then ``Dense(tanh)`` holding the head's weights; sentence-transformers has no pooler-head module, and
  embench reads the pair back as ``cls`` (:func:`embench.models.st_folder.is_pooler_head`);
* ``cls`` without a head, ``cls_before_pooler``, ``mean``, ``max``, ``last_token``, ``weighted_mean``:
  the ``Pooling`` mode of the same name;
* ``first_last_avg`` and ``embed_last_avg`` (two layers), a pooler head that is not dense + tanh,
  bidirectional decoder layers (BeLLM) and a prompt with words after the text (PromptEOL, BeLLM) have no
  sentence-transformers form: the folder stays a Hugging Face folder and says so (the model card,
  ``embench_training.json``).

A prompt template whose text comes last (``"query: {text}"``) becomes the default prompt; sentence-transformers'
prompts are prefixes, so any other template leaves the folder a Hugging Face one (above).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ..models.families import apply_prompt
from ..models.pooling_names import st_mode
from ..models.prompt_fit import words_after_text

PROMPT_NAME = "default"  # the name of the one prompt embench trains with, applied to every text
SIMILARITY = "cosine"  # every embench training loss compares vectors by cosine (train/losses.py)


def pooler_head(encoder: torch.nn.Module) -> torch.nn.Linear | None:
    """The dense layer of a BERT-style pooler head (dense + tanh over the first token), else None."""
    pooler = getattr(encoder, "pooler", None)
    dense = getattr(pooler, "dense", None)
    if isinstance(dense, torch.nn.Linear) and isinstance(getattr(pooler, "activation", None), torch.nn.Tanh) \
            and dense.in_features == dense.out_features:
        return dense
    return None


def prompt_prefix(template: str) -> str | None:
    """The text before ``{text}`` when a template is ``PREFIX{text}`` ('' for no template), else None."""
    if not template:
        return ""
    # words after the text, or a text form ({text:period}): no prefix (the rule evaluation's truncation follows too)
    return None if words_after_text(template) else apply_prompt(template, [""])[0]


def unexpressible(encoder: torch.nn.Module, pooling: str, meta: dict[str, Any]) -> str | None:
    """Why sentence-transformers cannot give this checkpoint's vectors, or None when it can."""
    family = (meta.get("config") or {}).get("family")
    if family:
        from ..models.families import FAMILIES

        if FAMILIES.get(family).patch is not None:
            return f"the model family {family!r} changes the model when it loads, which sentence-transformers does not"
    if meta.get("bidirectional_last"):
        return (f"its last {meta['bidirectional_last']} decoder layer(s) attend in both directions (BeLLM, "
                f"--bidirectional-mode {meta.get('bidirectional_mode') or 'mask'}), which sentence-transformers does not do")
    if meta.get("remove_layernorm"):  # the weights hold no such norms; loading the folder alone puts fresh ones back
        return (f"its last {meta['remove_layernorm']} layer(s) run without their LayerNorms (JTCSE's remove_layernorm), "
                "which only embench's ensemble.json of the twin (`..`) applies when it loads")
    if pooling == "cls" and getattr(encoder, "pooler", None) is not None and pooler_head(encoder) is None:
        return f"its pooler head ({type(encoder.pooler).__name__}) is not a square dense layer + tanh"
    if pooling != "cls" and st_mode(pooling) is None:
        return f"sentence-transformers has no pooling mode for embench's {pooling!r}"
    if prompt_prefix(str(meta.get("prompt") or "")) is None:  # it was written with empty prompts: other vectors
        return (f"its prompt {meta['prompt']!r} has words after the text (or a form of the text), and "
                "sentence-transformers' prompts are prefixes")
    return None


def write_sentence_transformers(folder: Path, encoder: torch.nn.Module, *, pooling: str, max_length: int,
                                prompt: str, normalize: bool) -> list[str]:
    """Make ``folder`` (which holds the HF model and tokenizer) a sentence-transformers folder; returns the
    modules written, e.g. ``["Transformer", "Pooling", "Dense"]``."""
    from sentence_transformers import SentenceTransformer

    try:  # sentence-transformers >= 6
        from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling, Transformer
    except ImportError:
        from sentence_transformers.models import Dense, Normalize, Pooling, Transformer

    from ..report.progress import third_party_bars

    hidden = int(encoder.config.hidden_size)
    head = pooler_head(encoder) if pooling == "cls" else None
    with third_party_bars(False):  # reading back the weights just written is no step the user waits for
        modules: list[torch.nn.Module] = [Transformer(str(folder), max_seq_length=int(max_length))]
    modules.append(Pooling(hidden, pooling_mode=st_mode("cls_before_pooler" if pooling == "cls" else pooling)))
    if head is not None:
        modules.append(Dense(hidden, hidden, bias=True, activation_function=torch.nn.Tanh(),
                             init_weight=head.weight.detach().cpu().clone(), init_bias=head.bias.detach().cpu().clone()))
    if normalize:
        modules.append(Normalize())
    prefix = prompt_prefix(prompt)  # a prefix: any other prompt is unexpressible() (no folder of these modules)
    # the prompt under every name: sentence-transformers adds empty "query" and "document" prompts, which mteb
    # would otherwise pick over the default one
    prompts = {PROMPT_NAME: prefix, "query": prefix, "document": prefix} if prefix else {}
    model = SentenceTransformer(modules=modules, device="cpu", prompts=prompts,
                                default_prompt_name=PROMPT_NAME if prompts else None, similarity_fn_name=SIMILARITY)
    with third_party_bars(False):
        model.save(str(folder), create_model_card=False)  # the model card is embench's (train/model_card.py)
    return [type(m).__name__ for m in modules]
