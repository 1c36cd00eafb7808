"""A full disk for a test: ``ulimit -f`` in this process (tests/test_faults_*.py)."""

from __future__ import annotations

import contextlib
import resource


@contextlib.contextmanager
def file_size_limit(nbytes: int):
    """``ulimit -f``: a write past ``nbytes`` fails with EFBIG (Python ignores SIGXFSZ), as on a full disk."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
