"""Whether a process of this machine is still running (for locks and job markers left by a crash)."""

from __future__ import annotations

import os


def process_alive(pid: int) -> bool:
    """True when ``pid`` runs on this machine (another user's process included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True
