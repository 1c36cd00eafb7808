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

A checkpoint loaded by name is keyed by its files' fingerprint, read at load, and its weights are as
reachable (``encoder.model``): :class:`CheckpointFingerprint` keeps that key while the loaded weights are
as read, and once one is written in memory keys the weights' own hash instead (joined with the files',
for the tokenizer's and Dense modules' part), so an edited model is never served its old vectors or
records. A write through ``param.data`` (a tensor of its own, without the parameter's counter) is not
seen: write the parameter itself (``param.add_()`` under ``torch.no_grad()``, an optimizer,
``load_state_dict``) or load it again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .fingerprints import joined, module_fingerprint


def _version(t: torch.Tensor) -> object:
    """``t``'s version counter; for an inference tensor (or a Parameter whose data is one: cast or moved under
    ``torch.inference_mode``) a new object, equal to no earlier state, so the weights are hashed again at each
    check: written in place inside ``torch.inference_mode`` it bumps no counter (a Parameter's stays put, a bare
    inference tensor has none), so no cheap state shows the edit. embench's own loading never makes such tensors."""
    return object() if t.is_inference() else t._version


def weights_state(module: torch.nn.Module) -> tuple:
    """What changes when a parameter or buffer is written or replaced: each one's object, storage, dtype,
    shape and version counter (:func:`_version`). A walk over the tensors, no hashing."""
    return tuple((name, id(t), t.data_ptr(), t.dtype, tuple(t.shape), _version(t))
                 for named in (module.named_parameters(), module.named_buffers()) for name, t in named)


class WeightsFingerprint:
    """Called, the fingerprint of ``module``'s current weights (and ``tokenizer``'s state): hashed again only
    when :func:`weights_state` moved since the last call."""

    def __init__(self, module: torch.nn.Module, tokenizer: Any = None):
        self.module, self.tokenizer = module, tokenizer
        self._seen: tuple | None = None  # not hashed yet
        self._value = ""

    def __call__(self) -> str:
        versions = weights_state(self.module)
        if versions != self._seen:
            self._value = module_fingerprint(self.module, self.tokenizer)
            self._seen = versions
        return self._value


class CheckpointFingerprint:
    """Called, a checkpoint's key: its ``files`` fingerprint while the weights are unloaded or as loaded
    (:meth:`loaded` is told when they are, after any cast, move or compile), else that joined with the hash of
    the weights as they are now (hashed again only after a further write)."""

    def __init__(self, files: str):
        self.files = files
        self.module: torch.nn.Module | None = None
        self._seen: tuple = ()
        self._value = files

    def loaded(self, module: torch.nn.Module) -> None:
        self.module, self._seen, self._value = module, weights_state(module), self.files

    def __call__(self) -> str:
        if self.module is None:
            return self.files
        state = weights_state(self.module)
        if state != self._seen:  # written since load (or since the last hash): key the weights themselves
            self._value, self._seen = joined(self.files, module_fingerprint(self.module)), state
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
