"""What :func:`embench.evaluate` is given as a model, as an encoder: a name or folder loaded, an embench encoder as it
is, a SentenceTransformer still equal to its folder as that folder, any other object with ``encode`` wrapped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import EmbenchError
from ..encoding.encoder_interface import Encoder
from .foreign import ForeignEncoder
from .loader import load_model
from .st_object import folder_encoder, folder_name


def as_encoder(model: Any, model_opts: dict[str, Any], label: str | None = None) -> Encoder:
    """A name or folder loaded; an embench encoder as it is; any other object with ``encode`` wrapped, except a
    SentenceTransformer still equal to its folder, which is that folder loaded (its cache and records shared)."""
    if isinstance(model, (str, Path)):
        return load_model(model, **model_opts)
    if model_opts:
        raise EmbenchError(f"model options {sorted(model_opts)} apply when the model is given by name; pass them to load_model() instead")
    if hasattr(model, "encode_batch") and hasattr(model, "cache_key"):
        return model

    def load(folder: Path) -> Encoder:  # the label names its row only
        device = next(model.parameters()).device.type if hasattr(model, "parameters") else None
        return load_model(folder, name=folder_name(folder), device=device)

    encoder = folder_encoder(model, load)  # else a SentenceTransformer, or a user's object with encode(texts)
    return encoder if encoder is not None else ForeignEncoder(model, name=label)
