"""A task file's data in its records' key, and the records stored before it was.

A record's key hashes its task's name, the encoder and the protocol; a task file's task is named by the file, so two
task files of one name in two folders (a copy with edited data) keyed one record, ``my-sts-<key>.json``, and each
run replaced the other's. Its protocol now carries ``task_data``, a digest of the sha256 of the task file and of each
data file (``tasks.recorded_protocol.TaskKeyedProtocol``), so each version of the data has a record of its own. The
digest is of the checksums only, never of paths: a record's provenance keeps them, so a record stored before
(no ``task_data``) is still found when its data is the data at hand (``results.ResultStore.find``), then checked
file by file as every record is before it is reused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..core.hashing import stable_hash

TASK_DATA = "task_data"
KEY = re.compile(r"[0-9a-f]{16}")  # a record file's key: results.record_key


def data_digest(sha256s: Iterable[str]) -> str:
    """The digest of a task's files by their sha256 (in any order): the ``task_data`` of its records' protocol."""
    return stable_hash(sorted(sha256s), 16)
