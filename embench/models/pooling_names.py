"""embench's poolers and sentence-transformers' pooling modes: ONE table, read both ways.

The checkpoint writer (:mod:`embench.train.checkpoints`) turns an embench pooler into the mode of a
``Pooling`` module; the folder reader (:mod:`embench.models.st_folder`) turns a saved ``Pooling``
config back into the embench pooler. Both look here, so the two directions cannot drift apart.

sentence-transformers has saved the mode two ways: one ``pooling_mode`` string (``"cls"``, ``"mean"``,
...; its recent releases) and one boolean per mode (``pooling_mode_cls_token``,
``pooling_mode_mean_tokens``, ...; older ones, and most folders on the hub). Both are read.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import EmbenchError

# embench pooler -> sentence-transformers mode. ``cls`` is not here: with a pooler head (BERT's dense +
# tanh) it is ``cls_before_pooler`` followed by a Dense(tanh) module holding the head's weights; without
# one it is ``cls_before_pooler`` itself (models/pooling.py).
ST_MODES: dict[str, str] = {
    "cls_before_pooler": "cls",
    "mean": "mean",
    "max": "max",
    "last_token": "lasttoken",
    "weighted_mean": "weightedmean",
}
# the boolean keys of sentence-transformers before its single ``pooling_mode`` string, and their mode
LEGACY_KEYS: dict[str, str] = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}
_FROM_ST = {mode: pooler for pooler, mode in ST_MODES.items()}


def st_mode(pooler: str) -> str | None:
    """The sentence-transformers mode of an embench pooler, or None when sentence-transformers has none."""
    return ST_MODES.get(pooler)


def pooler_of(cfg: dict[str, Any], where: str = "sentence-transformers Pooling config") -> str:
    """The embench pooler of a saved ``Pooling`` config (either form); a mode embench lacks, or several
    modes concatenated, is an error naming ``where``."""
    mode = cfg.get("pooling_mode") if isinstance(cfg, dict) else None
    if isinstance(mode, str):
        modes = [mode]
    elif isinstance(mode, list):
        modes = [str(m) for m in mode]
    elif isinstance(cfg, dict):
        modes = [m for key, m in LEGACY_KEYS.items() if cfg.get(key)]
    else:
        modes = []
    if len(modes) != 1 or modes[0] not in _FROM_ST:
        raise EmbenchError(f"{where}: unsupported sentence-transformers pooling {modes!r}; embench reads one of "
                           f"{', '.join(_FROM_ST)}")
    return _FROM_ST[modes[0]]
