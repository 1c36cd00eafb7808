"""The protocol a task runs under and the one its record names: the one asked, with the task's own seed where no seed
was given (mteb's 42 for an MTEB task), and the task's own reading of it where the task ignores some axes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields, replace
from typing import Any

from ..evaluation.protocols import EvalProtocol


def seeded_protocol(task: Any, protocol: EvalProtocol, seed_given: bool) -> EvalProtocol:
    """The protocol ``task`` runs under: ``protocol``, whose seed, when none was given (``seed_given`` False: the CLI's
    unset ``--seed`` and the API's absent ``seed`` reach :class:`EvalProtocol` as its default, 1111), is the task's own
    where it has one (``default_seed``: mteb's 42), so that a record names the seed its task ran with and an explicit
    ``--seed 1111`` runs as 1111."""
    own = getattr(task, "default_seed", None)
    return protocol if seed_given or own is None else replace(protocol, seed=own)


def task_protocol(task: Any, protocol: EvalProtocol) -> EvalProtocol:
    """An mteb task's record names only what mteb reads (``recorded_protocol``); every other task's, the protocol asked."""
    own = getattr(task, "recorded_protocol", None)
    return own(protocol) if own is not None else protocol


def with_defaults(protocol: EvalProtocol, kept: Iterable[str]) -> EvalProtocol:
    """``protocol`` with every axis but ``kept`` at its default: the protocol the record of a task that reads only the
    ``kept`` axes names (one record however the others were set: `--sick-split full` re-keyed STS13 and MRPC alike)."""
    kept, default = set(kept), EvalProtocol()
    return replace(protocol, **{f.name: getattr(default, f.name) for f in fields(EvalProtocol) if f.name not in kept})
