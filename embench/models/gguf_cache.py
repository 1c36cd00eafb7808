"""The fp32 weights of a GGUF file, kept as safetensors after the first load.

``transformers`` dequantises a GGUF file on every load (about 20 s for SmolLM2-135M on 2 cores);
the dequantised model is saved once under ``$EMBENCH_GGUF_CACHE`` (default
``~/.cache/embench/gguf``), in a folder named by the file's fingerprint, so a second load of the
same file reads safetensors. A folder that cannot be written only costs the speed-up.
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

log = logging.getLogger(__name__)


def gguf_cache_dir() -> Path:
    return Path(os.environ.get("EMBENCH_GGUF_CACHE") or Path.home() / ".cache" / "embench" / "gguf").expanduser()


def load_gguf_cached(fingerprint: str, read: Callable[[], torch.nn.Module], load_kwargs: dict[str, Any]) -> torch.nn.Module:
    """The model of the GGUF file with ``fingerprint``: from the cache, else ``read()`` and then cached."""
    from transformers import AutoModel

    folder = gguf_cache_dir() / fingerprint
    if (folder / "config.json").is_file() and any(folder.glob("*.safetensors")):
        return AutoModel.from_pretrained(folder, torch_dtype=torch.float32, **load_kwargs)
    model = read()
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{fingerprint}-", dir=folder.parent))
        model.save_pretrained(tmp)
        try:
            tmp.rename(folder)  # atomic: a concurrent reader sees the whole folder or none
        except OSError:  # another process cached it first
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError as e:
        log.warning("could not cache the dequantised GGUF weights in %s (%s); the next load dequantises again", folder, e)
    return model
