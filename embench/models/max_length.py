"""A model's length limits: the longest input it takes as released, and a --max-length checked against it."""

from __future__ import annotations

from typing import Any

from ..core.arguments import whole_number
from ..core.errors import EmbenchError


def check_max_length(max_length: int | None, config: Any, option: str = "--max-length", tokenizer: Any = None) -> None:
    """--max-length (or ``option``) must be positive and within the model's position embeddings (beyond, they do not
    exist); with the ``tokenizer``, room for one real token besides the special tokens it adds to every text."""
    if whole_number(max_length, option, least=None) is None:
        return
    if max_length < 1:
        raise EmbenchError(f"{option} must be at least 1, got {max_length}")
    # a fast tokenizer does not truncate at all below its special tokens' count (BERT: 1 gave every text whole, under
    # a record saying 1), and at that count a text is its special tokens alone ([CLS][SEP]: the same vector for all)
    special = tokenizer.num_special_tokens_to_add() if hasattr(tokenizer, "num_special_tokens_to_add") else 0
    if max_length <= special:
        raise EmbenchError(f"{option} {max_length} holds no text: the tokenizer adds {special} special token(s) to every "
                           f"text, so max_length must be at least {special + 1}")
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        positions -= 2 if getattr(config, "model_type", "") in ("roberta", "xlm-roberta") else 0
        if max_length > positions:
            raise EmbenchError(f"{option} {max_length} is more than the model's {positions} positions")


def model_max_length(config: Any, tokenizer: Any) -> int:
    """The longest input a model takes as it was released: its tokenizer's ``model_max_length``, within its
    position embeddings (RoBERTa's two reserved positions off; a tokenizer saved with a model of fewer
    positions must not ask for more), else 512."""
    pos = getattr(config, "max_position_embeddings", None)
    positions = None
    if isinstance(pos, int) and pos > 0:
        positions = pos - 2 if getattr(config, "model_type", "") in ("roberta", "xlm-roberta") else pos
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < 100_000:
        return min(tok_max, positions) if positions else tok_max
    return positions or 512
