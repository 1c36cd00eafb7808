"""Texts put into a prompt template so that the template survives truncation.

A template with words after ``{text}`` (BeLLM's 'The representative word for sentence {text} is:"', PromptEOL's)
is read at its last token under last-token pooling. Truncating the prompted string from the right cuts that end
off a long text, and the vector is then read at some word of the sentence instead. AnglE's tokenizer (angle_emb
``AngleDataTokenizer``, which the BeLLM authors train with) cuts the text instead: to the maximum length less the
template's tokens, decoded back to text and put into the template. Done the same here; a template that ends with
the text (a prefix such as 'query: ') loses nothing to right truncation, and its texts are left as they are.
"""

from __future__ import annotations

from typing import Any

from .families import apply_prompt
from .fast_tokens import token_ids


def _length(tokenizer: Any, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=True)["input_ids"])


def lowered(texts: list[str], lowercase: bool) -> list[str]:
    """The texts as a ``do_lower_case`` model reads them (the prompt is not lower-cased: ``HFEncoder._prepare``)."""
    return [t.lower() for t in texts] if lowercase else texts


def words_after_text(prompt: str) -> bool:
    """Whether ``prompt`` puts anything after the text (``{text:period}``'s full stop too): right truncation would cut it."""
    return bool(prompt) and not apply_prompt(prompt, ["\x00"])[0].endswith("\x00")


def prompt_truncation(prompt: str) -> dict[str, str]:
    """The encoder setting that says a long text is cut, not the prompt's end (:func:`prompted_token_ids`), for a
    prompt with words after the text: in the cache key and the record's identity, as those texts' token ids changed
    when evaluation began to cut them as training does (vectors of the template cut off are never served for these)."""
    return {"prompt_truncation": "text"} if words_after_text(prompt) else {}


def prompted_within(tokenizer: Any, prompt: str, texts: list[str], max_length: int) -> list[str]:
    """``apply_prompt(prompt, texts)``, each text too long for ``max_length`` tokens cut before it goes into the
    template, so that the prompted text fits whole (the template's end included)."""
    full = apply_prompt(prompt, texts)
    if not texts or not words_after_text(prompt):
        return full
    long = [i for i, ids in enumerate(tokenizer(full, add_special_tokens=True)["input_ids"]) if len(ids) > max_length]
    budget = max_length - _length(tokenizer, apply_prompt(prompt, [""])[0])
    if not long or budget < 1:  # all fit, or the template alone fills the length: right truncation as before
        return full
    for i in long:
        ids = tokenizer(texts[i], add_special_tokens=False)["input_ids"]
        keep = min(budget, len(ids))
        # decoding and tokenising again can merge differently at the edges: shorten until the prompted text fits
        while keep > 0 and _length(tokenizer, cut := apply_prompt(prompt, [tokenizer.decode(ids[:keep])])[0]) > max_length:
            keep -= 1
        full[i] = cut if keep > 0 else apply_prompt(prompt, [""])[0]
    return full


def prompted_token_ids(tokenizer: Any, prompt: str, texts: list[str], max_length: int,
                       prompted: list[str] | None = None) -> dict[str, list[list[int]]]:
    """``token_ids`` of the prompted ``texts``, as :func:`prompted_within` makes them: one tokenisation of the batch;
    only the rows that reach ``max_length`` (the only ones truncation can have cut) are fitted and tokenised again.
    Training and evaluation (``HFEncoder.pretokenize``, which passes its ``prompted`` texts) both tokenise this way."""
    ids = token_ids(tokenizer, apply_prompt(prompt, texts) if prompted is None else prompted, max_length)
    at_limit = [i for i, row in enumerate(ids["input_ids"]) if len(row) >= max_length]
    if not at_limit or not words_after_text(prompt):  # a prefix, or none: right truncation cuts the text alone
        return ids
    again = token_ids(tokenizer, prompted_within(tokenizer, prompt, [texts[i] for i in at_limit], max_length), max_length)
    for key, rows in again.items():
        for i, row in zip(at_limit, rows, strict=True):
            ids[key][i] = row
    return ids
