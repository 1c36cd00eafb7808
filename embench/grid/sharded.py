"""The grid's several-device encoding: the one of :mod:`embench.models.devices`, under its grid name."""

from __future__ import annotations

from ..models.devices import parse_devices, prefill_sharded, split_texts

__all__ = ["parse_devices", "prefill_sharded", "split_texts"]
