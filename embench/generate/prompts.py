"""The instruction prompts of MultiCSR (Wang et al., 2024, Appendix A) and the user's own.

Stage 1 draws, for each premise, one entailment and one contradiction instruction at random (App. A:
"randomly select one from the entailment prompts and the other one from the contradiction prompts"); the
one drawn for the other label is the noisy instruction of contrastive decoding (§3.1: the opposite
instruction works best, Figure 5). Stage 2 scores each pair with the "Measuring Similarity Prompt".

A template holds ``{premise}`` (and, for scoring, ``{hypothesis}``); ``render`` fills it, and wraps it in
the tokenizer's chat template when the model has one (an instruct model answers its own turn format).
"""

from __future__ import annotations

import random
from typing import Any

from ..core.errors import EmbenchError

ENTAILMENT = (
    "Please paraphrase the input sentence or phrase, providing an alternative expression with the same meaning.",
    "Rewrite the following sentence or phrase using different words and sentence structure while preserving its "
    "original meaning.",
    "Create a sentence or phrase that is also true, assuming the provided input sentence or phrase is true.",
    "Please provide a concise paraphrase of the input sentence or phrase, maintaining the core meaning while altering "
    "the words and sentence structure. Feel free to omit some of the non-essential details like adjectives or adverbs.",
)
CONTRADICTION = (
    "Revise the provided sentence by swapping, changing, or contradicting some details in order to express a different "
    "meaning, while maintaining the general context and structure.",
    "Generate a slightly modified version of the provided sentence to express an opposing or alternate meaning by "
    "changing one or two specific elements, while maintaining the overall context and sentence structure.",
    "Transform the input sentence by adjusting, altering, or contradicting its original meaning to create a logical and "
    "sensible output sentence with a different meaning from the input sentence.",
    "Generate a sentence that conveys a altering, contrasting or opposite idea to the given input sentence, while "
    "ensuring the new sentence is logical, realistic, and grounded in common sense.",
)
# App. A's "Measuring Similarity Prompt", as printed (with its curly quotes)
SCORING = ("Scoring the semantic similarity of the following sentences between 0.0 and 5.0, 5.0 means they have the "
           "same meaning, 0.0 means they are completely different: (a) \u201c{premise}\u201d, (b) \u201c{hypothesis}\u201d:")
# how an App. A instruction meets its input (the paper: "concatenation of an instruction I and an input x")
INPUT_FORMAT = '{instruction}\nInput: "{{premise}}"'
LABELS = ("entailment", "contradiction")


def builtin(label: str) -> list[str]:
    """The four App. A templates of ``label`` (entailment | contradiction), each with ``{premise}``."""
    instructions = ENTAILMENT if label == "entailment" else CONTRADICTION
    return [INPUT_FORMAT.format(instruction=i) for i in instructions]


def check_template(template: str, option: str, fields: tuple[str, ...] = ("premise",)) -> str:
    """A user's template must say where the premise goes; any other brace must be doubled."""
    missing = [f for f in fields if "{" + f + "}" not in template]
    if missing:
        need = " and ".join("{" + f + "}" for f in fields)
        raise EmbenchError(f"{option} {template!r} has no {', '.join('{' + m + '}' for m in missing)}: write where the "
                           f"sentence goes ({need}), e.g. 'Paraphrase: {{premise}}'")
    try:
        template.format(**dict.fromkeys(fields, "x"))
    except (KeyError, IndexError, ValueError) as e:
        raise EmbenchError(f"{option} {template!r}: only {', '.join('{' + f + '}' for f in fields)} may stand in braces "
                           f"(double other braces: {{{{ }}}}) ({e})") from None
    return template


class PromptSet:
    """The entailment and contradiction templates, and the seeded draw of one of each per premise."""

    def __init__(self, entailment: list[str] | None = None, contradiction: list[str] | None = None, seed: int = 0):
        self.templates = {
            "entailment": [check_template(t, "--prompt-entailment") for t in entailment] if entailment else builtin("entailment"),
            "contradiction": ([check_template(t, "--prompt-contradiction") for t in contradiction] if contradiction
                              else builtin("contradiction")),
        }
        self.seed = seed

    def draw(self, key: int) -> tuple[int, int]:
        """(entailment index, contradiction index) for premise ``key``: the same on every run and resume."""
        rng = random.Random(f"{self.seed}:{key}")
        return rng.randrange(len(self.templates["entailment"])), rng.randrange(len(self.templates["contradiction"]))

    def text(self, label: str, index: int, premise: str) -> str:
        return self.templates[label][index].format(premise=premise)


def uses_chat(tokenizer: Any, chat: bool | None) -> bool:
    """Whether prompts go through the chat template: ``chat``, or (None) whether the tokenizer has one."""
    return getattr(tokenizer, "chat_template", None) is not None if chat is None else chat


def render(tokenizer: Any, text: str, chat: bool | None) -> str:
    """``text`` as the model's user turn (chat template, assistant turn opened) when ``chat`` (None: when the
    tokenizer has a chat template), else as it is."""
    use = uses_chat(tokenizer, chat)
    if not use:
        return text
    if getattr(tokenizer, "chat_template", None) is None:
        raise EmbenchError("--chat: this tokenizer has no chat template")
    return tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True)
