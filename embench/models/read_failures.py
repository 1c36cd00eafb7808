"""What a checkpoint whose config or tokenizer cannot be read is said as: one error of embench's, not a library's pages.

* A model asking for its own code (an ``auto_map`` naming classes that transformers does not have): one line naming
  the folder. embench does not run a model's own code (``trust_remote_code`` stays off, and no option of the
  command line turns it on), so transformers' four lines, which end by asking for ``trust_remote_code=True`` and
  link a local folder as ``https://hf.co//tmp/...``, would send the reader the wrong way.
* A GGUF file of an architecture transformers does not read: the architectures it reads.
* Anything else: every way that was tried (:class:`~embench.core.errors.ModelLoadError`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NoReturn

from ..core.errors import EmbenchError, ModelLoadError


def read_failed(raw_name: str, tried: list[str], hf_folder: Path, gguf_path: Path | None, error: Exception,
                trust_remote_code: bool) -> NoReturn:
    """Raise the error that says why the config or tokenizer of ``raw_name`` (read from ``hf_folder``) was not read."""
    if not trust_remote_code and "trust_remote_code" in str(error):
        raise EmbenchError(f"{hf_folder}: the model asks to run its own code ({_asking(hf_folder)}); embench does not "
                           "run a model's own code (trust_remote_code stays off)") from None
    if gguf_path is not None and "is not supported" in str(error):
        from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES

        raise EmbenchError(f"{gguf_path}: {error} transformers reads GGUF files of these architectures: "
                           f"{', '.join(sorted(set(GGUF_SUPPORTED_ARCHITECTURES) - {'general', 'tokenizer'}))}") from None
    raise ModelLoadError(raw_name, [*tried, f"transformers from {hf_folder}: {type(error).__name__}: {error}"]) from error


def _asking(folder: Path) -> str:
    """Which of the folder's files carry an ``auto_map`` (the classes transformers would import from the folder)."""
    asking = []
    for name in ("config.json", "tokenizer_config.json"):
        try:
            if "auto_map" in json.loads((Path(folder) / name).read_text(encoding="utf-8")):
                asking.append(name)
        except (OSError, ValueError, TypeError):
            continue
    return f"auto_map in {' and '.join(asking)}" if asking else "auto_map"
