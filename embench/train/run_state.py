"""What the trainer checks when it writes and resumes: a checkpoint write that fails is one error, the
training examples have one fingerprint, and a metrics log line is read whatever a kill left of it."""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

from ..core.errors import EmbenchError


@contextlib.contextmanager
def writing(folder: Path):
    """A checkpoint that cannot be written (a full disk, a read-only --out) is one error; the previous one stays."""
    try:
        yield
    except OSError as e:
        raise EmbenchError(f"could not write {folder} ({e.strerror or e}); the checkpoint written before it is kept: "
                           "free space (or choose another --out) and run the same command with --resume") from None


def data_fingerprint(examples: Any) -> str:
    """sha256 over the training examples in order (one pass, no copy of the data)."""
    h = hashlib.sha256()
    # a list of examples, or an object holding them (the crop corpus: its documents' chunks)
    for ex in examples if hasattr(examples, "__iter__") else sorted(vars(examples).items()):
        h.update(repr(ex).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:16]


def logged_step(line: str) -> int | None:
    """The step of a metrics.jsonl line, or None for a blank or torn one."""
    try:
        return int(json.loads(line)["step"])
    except (ValueError, KeyError, TypeError):
        return None
