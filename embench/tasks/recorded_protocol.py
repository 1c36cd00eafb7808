"""The protocol a task's record names: the one asked, or the task's own reading of it where the task ignores some axes."""

from __future__ import annotations

from typing import Any

from ..evaluation.protocols import EvalProtocol


def task_protocol(task: Any, protocol: EvalProtocol) -> EvalProtocol:
    """An mteb task's record names only what mteb reads (``recorded_protocol``); every other task's, the protocol asked."""
    own = getattr(task, "recorded_protocol", None)
    return own(protocol) if own is not None else protocol
