"""Models: the Encoder interface, poolers, and loading any checkpoint.

The names below are imported on first use (:mod:`embench.core.lazy`): listing the model families or
aliases imports no torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy import lazy_exports

_EXPORTS = {"Encoder": "..encoding.encoder_interface", "EncoderSettings": ".encoder", "HFEncoder": ".encoder", "ALIASES": ".aliases",
            "load_model": ".loader", "pick_device": ".device_choice", "POOLERS": ".poolers"}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = ["ALIASES", "POOLERS", "Encoder", "EncoderSettings", "HFEncoder", "load_model", "pick_device"]

if TYPE_CHECKING:  # what type checkers and IDEs see
    from ..encoding.encoder_interface import Encoder
    from .aliases import ALIASES
    from .device_choice import pick_device
    from .encoder import EncoderSettings, HFEncoder
    from .loader import load_model
    from .poolers import POOLERS
