"""What the engine needs from a model: the ``Encoder`` interface.

It lives with the engine, not with the models that implement it (``models/encoder.py``'s ``HFEncoder``,
ensembles, foreign encoders), so the engine names the type it takes without importing a model, and
the models import the engine (for ``encode()``) without a circle.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Encoder(Protocol):
    """What the engine needs from a model."""

    name: str

    def token_lengths(self, texts: list[str]) -> np.ndarray: ...

    def encode_batch(self, texts: list[str]) -> np.ndarray: ...

    def cache_key(self) -> str: ...

    def describe(self) -> dict[str, Any]: ...
