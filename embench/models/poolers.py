"""The poolers by name (``embench list poolers``, ``--pooling``): lazy entries pointing into
:mod:`embench.models.pooling`, so naming, listing and did-you-mean import no torch. A new pooler is a
function in ``pooling.py`` and one row here (or ``POOLERS.add(name, function)`` from anywhere, or an entry point
of the group ``embench.poolers`` in a package of its own); one that reads the chosen layer alone says so
(``@chosen_layer_only``), else it gets every layer's states (:func:`needs_all_layers`)."""

from __future__ import annotations

from ..core.code_identity import outside_code
from ..core.plugins import function_with
from ..core.registry import Registry

POOLERS: Registry = Registry("pooler", plugins="embench.poolers",
                            expects=function_with((), "a function of a PoolInput giving one vector per text (embench.models.pooling)"))
# Keys a view's pooling adds to its settings' extra (so to its cache key and record), where vectors once differed
VIEW_KEYS = ("pooler_head_layer", "first_real_token", "pooler_code")


def needs_all_layers(pooling: str) -> bool:
    """Whether ``pooling`` needs every hidden state from the model: yes unless its function declares that it reads the
    chosen layer alone (``all_layers = False``: :func:`embench.models.pooling.chosen_layer_only`), as embench's own do
    but ``first_last_avg`` and ``embed_last_avg``. A plug-in once got the last layer alone unless it was one of those
    two by name, and crashed on the None it found at ``hidden_states[0]``."""
    return bool(getattr(POOLERS.get(pooling), "all_layers", True))


def view_keys(pooling: str, layer: int, num_layers: int, extra: dict) -> dict:
    """The extra keys of ``pooling`` at ``layer``: ``cls`` below the last layer goes through the pooler head
    (``pooler_head_layer``; it once took the raw states there), and ``cls``/``cls_before_pooler`` under left padding
    read each text's first real token (``first_real_token``; they once read column 0, padding in most texts).
    Keyed apart, no cached vector or stored record of the old reading is reused. A pooler from outside embench (a
    plug-in, ``POOLERS.add``) adds ``pooler_code``, its origin and code (:mod:`embench.core.code_identity`)."""
    keys: dict = {}
    if code := outside_code(POOLERS.get(pooling), POOLERS.plugin(pooling)):  # a plug-in's code: a changed one re-encodes
        keys["pooler_code"] = code
    if pooling == "cls" and layer < num_layers:
        keys["pooler_head_layer"] = layer
    if pooling in ("cls", "cls_before_pooler") and extra.get("padding_side") == "left":
        keys["first_real_token"] = True
    return keys

for _name, _function, _aliases, _what in (
    ("cls", "pool_cls", (), "the layer's first real token through the model's pooler head (dense + tanh) where it has one"),
    ("cls_before_pooler", "pool_cls_before_pooler", (), "the chosen layer's first real token, no head"),
    ("mean", "pool_mean", ("avg",), "mean of the chosen layer over real tokens"),
    ("max", "pool_max", (), "element-wise max over real tokens"),
    ("first_last_avg", "pool_first_last_avg", ("avg_first_last",), "SimCSE's: token mean of (layer 1 + last layer) / 2"),
    ("embed_last_avg", "pool_embed_last_avg", (), "BERT-whitening's: token mean of (embedding output + last layer) / 2"),
    ("last_token", "pool_last_token", ("lasttoken",), "the last real token, under left or right padding (decoder LLMs)"),
    ("weighted_mean", "pool_weighted_mean", ("weightedmean",), "SGPT's position-weighted mean: the i-th real token weighs i"),
):
    POOLERS.add(_name, f"embench.models.pooling:{_function}", *_aliases, description=_what)
