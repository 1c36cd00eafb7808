"""The encoder settings that make a result's identity, and how an unset one reads in a table.

A stored record's key (``evaluation.results.record_key``) hashes these settings with the task and the protocol,
so two records that differ in any of them are two results: every table that puts records in rows (``results
show``, ``report``) tells them apart by these same fields, never merging a prompted run into an unprompted one.
"""

from __future__ import annotations

import json
from typing import Any

ENCODER_FIELDS = ("fingerprint", "pooling", "layer", "max_length", "dtype", "normalize", "lowercase", "prompt")
# settings only some encoders have: part of the identity when set, so older records keep their keys
OPTIONAL_FIELDS = ("bidirectional_last", "bidirectional_mode", "prompt_name", "prompts", "revision",
                   "truncate_dim", "quantize",  # these two: the vectors scored (encoding/vector_axes.py)
                   "pooler_head_layer",  # cls below the last layer through the head (models/pooling.py), once it was not
                   "first_real_token",  # cls under left padding: each text's first real token, once column 0
                   "positions_per_text",  # GPT-2 under left padding: positions from each text's first token, once column 0
                   "prompt_tokens_excluded",  # Pooling(include_prompt=False): the prompt's tokens left out of the vector
                   "family",  # a family forced over the checkpoint's own, or one that patches it: padding, attention, hook
                   "final_norm", "remove_layernorm",  # a layer view through the final norm; an ensemble member's cut norms
                   "prompt_truncation",  # a long text cut, not the end of a prompt with words after it (models/prompt_fit.py)
                   "pooler_code")  # a plug-in pooler's distribution, version and code hash (core/code_identity.py)
# settings in the embedding cache key (every one of an encoder's settings) that a record's identity leaves out, and
# why: each follows from a field that is in it (tests/test_faults_records.py holds every other setting to the key)
NOT_IDENTITY = {
    "padding_side": "the family's: the checkpoint's own (its fingerprint) or a forced one (family)",
    "dense": "the names of the Dense modules, whose weights are in the fingerprint",
    "adapter": "the adapter's folder name; its weights are in the fingerprint",
    "precision": "how the dtype runs on the device (bf16 weights on a GPU, autocast on a CPU): the device is no identity",
}

# how a table shows a setting that is not set (layer None is the last layer, no prompt is "none")
UNSET = {"layer": "last", "max_length": "default", "prompt": "none", "prompt_name": "none", "prompts": "none",
         "revision": "default", "truncate_dim": "full", "quantize": "as encoded", "bidirectional_last": 0,
         "bidirectional_mode": "none", "prompt_tokens_excluded": 0, "family": "its own", "final_norm": False,
         "remove_layernorm": 0, "prompt_truncation": "right", "pooler_code": "embench's"}


def comparable(value: Any) -> Any:
    """``value`` as a table compares and hashes it: a dict or list (a model's prompts) as its sorted JSON text."""
    return json.dumps(value, sort_keys=True, default=str) if isinstance(value, (dict, list)) else value


def shown(field: str, value: Any) -> Any:
    """``value`` of ``field`` as a table shows it: its unset reading when it is None, empty or {}."""
    return UNSET.get(field, "default") if value is None or value == "" or value == {} else value
