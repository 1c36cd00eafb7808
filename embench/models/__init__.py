"""Models: the Encoder interface, poolers, and loading any checkpoint."""

from .encoder import Encoder, EncoderSettings, HFEncoder
from .loader import ALIASES, load_model, pick_device
from .pooling import POOLERS

__all__ = ["ALIASES", "POOLERS", "Encoder", "EncoderSettings", "HFEncoder", "load_model", "pick_device"]
