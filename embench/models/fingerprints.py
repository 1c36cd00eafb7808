"""Fingerprints of weights: what identifies a model in caches and records.

A checkpoint folder is fingerprinted from its config, weight and tokenizer files (their names, sizes and bytes,
memoised on the files' sizes, modification and change times and inodes, so a folder is read once per process); an in-memory model
from its parameters and config. The tokenizer's files are in it because they change the vectors as surely as
the weights do (a vocabulary, a lower-casing flag, an added token): a folder whose tokenizer was edited in place
must not be served the vectors cached for its old one.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch

# what a saved tokenizer may read besides models/tokenizer_files.TOKENIZER_FILES
TOKENIZER_EXTRA_FILES = ("special_tokens_map.json", "added_tokens.json", "merges.txt", "chat_template.jinja")


def weights_fingerprint(folder: Path, tokenizer: Any = None) -> str:
    """sha256 over the config and the full weight files of a checkpoint folder, joined where given with the
    tokenizer's: the files of the folder it is read from (a Path), or the state of an object
    (:func:`tokenizer_fingerprint`). The weights' part alone is what an adapter's base is checked against."""
    from .tokenizer_files import TOKENIZER_FILES

    files = sorted(p for p in folder.iterdir() if p.is_file() and (p.suffix in (".safetensors", ".bin", ".gguf") or p.name == "config.json"))
    weights = fingerprint_files(stat_files(*files))
    if tokenizer is None:
        return weights
    if isinstance(tokenizer, Path):  # named by file, not by path: a moved copy is still the same model
        tokenizer_files = [p for p in (tokenizer / n for n in (*TOKENIZER_FILES, *TOKENIZER_EXTRA_FILES)) if p.is_file()]
        return joined(weights, fingerprint_files(stat_files(*tokenizer_files)))
    return joined(weights, tokenizer_fingerprint(tokenizer))


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """sha256 over a tokenizer object's state: a fast tokenizer's serialised pipeline (vocabulary, normaliser,
    pre-tokeniser, added tokens), else its vocabulary and special tokens."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    state = backend.to_str() if backend is not None else json.dumps(sorted(tokenizer.get_vocab().items()))
    special = json.dumps(getattr(tokenizer, "special_tokens_map", {}), sort_keys=True, default=str)
    return hashlib.sha256((state + special).encode()).hexdigest()[:16]


def joined(*fingerprints: str) -> str:
    """One fingerprint of several parts (a model's weights and its Dense modules', or its tokenizer's)."""
    return hashlib.sha256("+".join(fingerprints).encode()).hexdigest()[:16]


def stat_files(*files: Path) -> tuple[tuple[str, int, int, int, int], ...]:
    """(path, size, mtime, ctime, inode) of each file: the memo key of :func:`fingerprint_files`. The change time
    and inode are in it because the modification time can be set back (``os.utime``) over new bytes of the same size,
    the change time cannot, and a file replaced by a rename is another inode."""
    return tuple((str(p), (st := p.stat()).st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) for p in files)


@lru_cache(maxsize=64)
def fingerprint_files(files: tuple[tuple[str, int, int, int, int], ...]) -> str:
    """sha256 over the files' names, sizes and bytes (the directory is no part of it: a moved copy is the same model)."""
    h = hashlib.sha256()
    for path, size, *_ in files:
        h.update(Path(path).name.encode() + str(size).encode())
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 22), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


def module_fingerprint(model: torch.nn.Module, tokenizer: Any = None) -> str:
    """sha256 over the parameters and config of an in-memory model, and its tokenizer's state where given."""
    h = hashlib.sha256()
    cfg = getattr(model, "config", None)
    if cfg is not None:
        h.update(json.dumps(cfg.to_diff_dict(), sort_keys=True, default=str).encode())
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().float().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16] if tokenizer is None else joined(h.hexdigest()[:16], tokenizer_fingerprint(tokenizer))
