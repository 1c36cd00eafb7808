"""The fp32 weights (and config and tokenizer) of a GGUF file, kept after the first load.

``transformers`` dequantises a GGUF file on every load (about 20 s for SmolLM2-135M on 2 cores);
the dequantised model is saved once under ``$EMBENCH_GGUF_CACHE`` (default
``~/.cache/embench/gguf``), in a folder named by the file's fingerprint, so a second load of the
same file reads safetensors, and its config and tokenizer from the same folder (converting the GGUF
tokenizer takes long too). A folder that cannot be written only costs the speed-up.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from .fingerprints import fingerprint_files, stat_files

log = logging.getLogger(__name__)


def gguf_cache_dir() -> Path:
    return Path(os.environ.get("EMBENCH_GGUF_CACHE") or Path.home() / ".cache" / "embench" / "gguf").expanduser()


def cached_gguf_folder(fingerprint: str) -> Path | None:
    """The cache folder of the GGUF file with ``fingerprint`` when it holds config, tokenizer and weights."""
    folder = gguf_cache_dir() / fingerprint
    complete = (folder / "config.json").is_file() and (folder / "tokenizer_config.json").is_file() and any(folder.glob("*.safetensors"))
    return folder if complete else None


def load_gguf_cached(fingerprint: str, read: Callable[[], torch.nn.Module], load_kwargs: dict[str, Any],
                     tokenizer: Any = None, auto_class: Any = None) -> torch.nn.Module:
    """The model of the GGUF file with ``fingerprint``: from the cache, else ``read()`` and then cached
    (with ``tokenizer``, which the next load then reads from the cache too). ``auto_class`` (default
    ``AutoModel``) reads the cached weights: a base model's and a causal LM's load into each other
    (transformers adds or drops the base-model prefix; SmolLM2's output head is tied to its embeddings)."""
    from transformers import AutoModel

    folder = gguf_cache_dir() / fingerprint
    if (folder / "config.json").is_file() and any(folder.glob("*.safetensors")):
        return (auto_class or AutoModel).from_pretrained(folder, torch_dtype=torch.float32, **load_kwargs)
    model = read()
    try:
        _save(model, folder, tokenizer)
    except Exception as e:  # noqa: BLE001  (any failure to cache costs only the speed-up, never the load)
        log.warning("could not cache the dequantised GGUF weights in %s (%s: %s); the next load dequantises again",
                    folder, type(e).__name__, e)
    return model


def _save(model: torch.nn.Module, folder: Path, tokenizer: Any = None) -> None:
    """The config (without its GGUF quantisation entry) and the fp32 weights, written atomically.
    ``save_pretrained`` refuses a model loaded from GGUF, so the pieces are written here."""
    from safetensors.torch import save_model

    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        config = model.config.to_dict()
        config.pop("quantization_config", None)
        type(model.config).from_dict(config).save_pretrained(tmp)
        save_model(model, str(tmp / "model.safetensors"))  # shared (tied) tensors are written once
        if tokenizer is not None:
            tokenizer.save_pretrained(tmp)
        tmp.rename(folder)  # atomic: a concurrent reader sees the whole folder or none
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already when the rename succeeded


def gguf_file_of(name: str) -> str | None:
    """The file name when ``name`` is a ``.gguf`` file (its folder is the checkpoint folder)."""
    p = Path(str(name)).expanduser()
    return p.name if p.suffix == ".gguf" and p.is_file() else None


def dequantised_gguf(path: Path) -> Path | None:
    """The cache folder holding a GGUF file's dequantised fp32 weights, config and tokenizer, made on first
    use so that every later load (the trainer's too) reads safetensors instead of dequantising again.
    None when the file cannot be read or cached: the caller then reads the file itself, and says why."""
    fingerprint = fingerprint_files(stat_files(path))
    cached = cached_gguf_folder(fingerprint)
    if cached is not None:
        return cached
    from transformers import AutoModel, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        load_gguf_cached(fingerprint, lambda: AutoModel.from_pretrained(path.parent, gguf_file=path.name, torch_dtype=torch.float32),
                         {}, tokenizer)
    except Exception:  # noqa: BLE001  (the caller's own load of the file reports what is wrong with it)
        return None
    return cached_gguf_folder(fingerprint)
