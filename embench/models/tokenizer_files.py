"""The files a saved tokenizer leaves in a model folder, and the error for a folder without any.

Without them transformers still builds a tokenizer from the config alone, with an empty vocabulary: every word
becomes ``[UNK]``, and the model scores, wrongly, without a word of warning (a ``model.save_pretrained`` without the
tokenizer's own ``save_pretrained`` leaves such a folder).
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import EmbenchError

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "tokenizer.model", "spiece.model",
                   "sentencepiece.bpe.model")


def has_tokenizer(folder: Path) -> bool:
    return any((folder / f).exists() for f in TOKENIZER_FILES)


def tokenizer_folder(hf_folder: Path, folder: Path, gguf: str | None) -> Path:
    """Where a model's tokenizer is read from: its transformer's folder (a GGUF file's own), else the model folder
    (a sentence-transformers root); an error where neither holds one."""
    if gguf or has_tokenizer(hf_folder):
        return hf_folder
    if not has_tokenizer(folder):
        raise EmbenchError(f"{folder} has no tokenizer (none of {', '.join(TOKENIZER_FILES)}): save it with the model "
                           "(tokenizer.save_pretrained(folder))")
    return folder
