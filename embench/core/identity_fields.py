"""The encoder settings that make a result's identity, and how an unset one reads in a table.

A stored record's key (``evaluation.results.record_key``) hashes these settings with the task and the protocol,
so two records that differ in any of them are two results: every table that puts records in rows (``results
show``, ``report``) tells them apart by these same fields, never merging a prompted run into an unprompted one.
"""

from __future__ import annotations

from typing import Any

ENCODER_FIELDS = ("fingerprint", "pooling", "layer", "max_length", "dtype", "normalize", "lowercase", "prompt")
# settings only some encoders have: part of the identity when set, so older records keep their keys
OPTIONAL_FIELDS = ("bidirectional_last", "bidirectional_mode", "prompt_name", "prompts", "revision",
                   "truncate_dim", "quantize",  # these two: the vectors scored (encoding/vector_axes.py)
                   "pooler_head_layer",  # cls below the last layer through the head (models/pooling.py), once it was not
                   "first_real_token")  # cls under left padding: each text's first real token, once column 0

# how a table shows a setting that is not set (layer None is the last layer, no prompt is "none")
UNSET = {"layer": "last", "max_length": "default", "prompt": "none", "prompt_name": "none", "prompts": "none",
         "revision": "default", "truncate_dim": "full", "quantize": "as encoded", "bidirectional_last": 0,
         "bidirectional_mode": "none"}


def shown(field: str, value: Any) -> Any:
    """``value`` of ``field`` as a table shows it: its unset reading when it is None, empty or {}."""
    return UNSET.get(field, "default") if value is None or value == "" or value == {} else value
