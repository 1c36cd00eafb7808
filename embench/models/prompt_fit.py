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


def prompted_within(tokenizer: Any, prompt: str, texts: list[str], max_length: int) -> list[str]:
    """``apply_prompt(prompt, texts)``, each text too long for ``max_length`` tokens cut before it goes into the
    template, so that the prompted text fits whole (the template's end included)."""
    full = apply_prompt(prompt, texts)
    if not prompt or not texts or apply_prompt(prompt, ["\x00"])[0].endswith("\x00"):  # nothing after the text
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


def prompted_token_ids(tokenizer: Any, prompt: str, texts: list[str], max_length: int) -> dict[str, list[list[int]]]:
    """``token_ids`` of the prompted ``texts``, as :func:`prompted_within` makes them: one tokenisation of the batch;
    only the rows that reach ``max_length`` (the only ones truncation can have cut) are fitted and tokenised again."""
    ids = token_ids(tokenizer, apply_prompt(prompt, texts), max_length)
    at_limit = [i for i, row in enumerate(ids["input_ids"]) if len(row) >= max_length]
    if not at_limit or not prompt:
        return ids
    again = token_ids(tokenizer, prompted_within(tokenizer, prompt, [texts[i] for i in at_limit], max_length), max_length)
    for key, rows in again.items():
        for i, row in zip(at_limit, rows, strict=True):
            ids[key][i] = row
    return ids
