"""The fingerprint of an in-memory module that follows its weights as they change.

``load_model(module, tokenizer=tok)`` hands embench a module its caller still holds: a training step, a
``param.add_()`` or a ``load_state_dict`` changes its vectors in place. A fingerprint taken once at load
would serve the vectors and records of the old weights under the same key (a SentenceTransformer object
is fingerprinted again on every ``evaluate()``, so it was not affected). Here the fingerprint is read
whenever a cache key, a record or a forward pass asks for it, and computed again only when some
parameter or buffer was written since (its version counter, storage or shape moved): reading it costs a
walk over the tensors, hashing them only follows a change. The hash is that of
:func:`~embench.models.fingerprints.module_fingerprint`, so it is exact; a module moved to another
device keeps it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .fingerprints import module_fingerprint


def tensor_versions(module: torch.nn.Module) -> tuple | None:
    """What changes when any parameter or buffer is written: each tensor's version counter (bumped by every
    in-place write, ``torch.no_grad`` or not), storage and shape. None when a tensor keeps no counter (one
    made under ``torch.inference_mode``): the fingerprint is then hashed on every read."""
    try:
        return tuple((name, t._version, t.data_ptr(), tuple(t.shape))
                     for named in (module.named_parameters(), module.named_buffers()) for name, t in named)
    except RuntimeError:
        return None


class WeightsFingerprint:
    """Called, the fingerprint of ``module``'s current weights (and ``tokenizer``'s state): hashed again only
    when :func:`tensor_versions` moved since the last call."""

    def __init__(self, module: torch.nn.Module, tokenizer: Any = None):
        self.module, self.tokenizer = module, tokenizer
        self._seen: tuple | None = None
        self._value = ""

    def __call__(self) -> str:
        versions = tensor_versions(self.module)
        if versions is None or versions != self._seen:
            self._value = module_fingerprint(self.module, self.tokenizer)
            self._seen = versions
        return self._value


class Followed:
    """An attribute given as a string or as a function giving one (a :class:`WeightsFingerprint`): read, it is
    the string, or the function's value now. What was given is kept as ``_<name>``, for a copy to follow too."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        given: str | Callable[[], str] = obj.__dict__[self.slot]
        return given if isinstance(given, str) else given()

    def __set__(self, obj: Any, value: str | Callable[[], str]) -> None:
        obj.__dict__[self.slot] = value
