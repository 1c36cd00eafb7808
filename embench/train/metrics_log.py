"""What a training run logs: every record kept in memory (``TrainResult.history``), appended to
``OUT/metrics.jsonl`` (one JSON object a line, flushed each time: a killed run keeps its lines) and,
with ``--tensorboard``, written as scalars to ``OUT/tensorboard``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core.errors import EmbenchError


class MetricsLog:
    def __init__(self) -> None:
        self.history: list[dict[str, Any]] = []
        self._file: Any = None  # open between open() and close(), in the main process only
        self._writer: Any = None

    def open(self, path: Path, tensorboard: Path | None = None) -> None:
        self._writer = _tensorboard(tensorboard) if tensorboard is not None else None  # its error before any file is open
        self._file = open(path, "a", encoding="utf-8")

    def emit(self, rec: dict[str, Any]) -> None:
        self.history.append(rec)
        if self._file is not None:
            self._file.write(json.dumps(rec) + "\n")
            self._file.flush()
        if self._writer is not None:
            for k, v in rec.items():
                if isinstance(v, (int, float)) and k != "step":
                    self._writer.add_scalar(k, v, rec["step"])

    def close(self) -> None:
        for handle in (self._file, self._writer):
            if handle is not None:
                handle.close()
        self._file = self._writer = None


TENSORBOARD_MISSING = "--tensorboard needs the tensorboard package (pip install 'embench[tensorboard]')"


def _tensorboard(folder: Path):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise EmbenchError(TENSORBOARD_MISSING) from None
    return SummaryWriter(str(folder))
