"""What :func:`embench.load_model` is given, checked before anything loads (a Python caller passes what the CLI's
parser would refuse: an empty name, a count as text or a fraction)."""

from __future__ import annotations

from typing import Any

from ..core.arguments import truth, whole_number
from ..core.errors import EmbenchError
from .max_length import check_max_length


def check_given(name_or_path: Any, max_length: Any, layer: Any, **flags: Any) -> None:
    """Before anything loads: a name that is not empty (it was read as the current folder: "Unrecognized model in ."),
    --max-length a whole number of at least 1 (the model's positions once its config is read), --layer a whole number
    (negative counts from the last layer; its range once the model's layers are known). A text or a fraction from the
    Python API failed in a comparison deep in the loading, or (``layer=1.5``) only when the first batch was pooled."""
    if isinstance(name_or_path, str) and not name_or_path.strip():
        raise EmbenchError("the model name is empty: give a name, an alias or a folder")
    check_max_length(max_length, None)
    whole_number(layer, "--layer", least=None)
    for what, value in flags.items():  # normalize, compile, ...: True or False, not a truthy string
        truth(value, what)
