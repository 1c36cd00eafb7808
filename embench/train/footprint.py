"""What a training run costs: its peak memory and the disk its output folder takes, said at its end.

A run that peaks at 18 GB or leaves 350 MB per seed should say so, not leave the user to find out from
the operating system. The up-front estimate of the same peak is :mod:`embench.train.memory_estimate`.
"""

from __future__ import annotations

import resource
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

from . import checkpoints


def peak_rss_bytes() -> int:
    """This process's peak resident memory so far (``ru_maxrss``: kilobytes on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def folder_bytes(folder: Path) -> int:
    """The bytes of every file under ``folder`` (0 when it does not exist)."""
    folder = Path(folder)
    if folder.is_file():
        return folder.stat().st_size
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


def human(n: float) -> str:
    """``n`` bytes as a short size: 87 MB, 17.9 GB."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}" if n < 10 * scale else f"{n / scale:.0f} {unit}"
    return f"{int(n)} B"


@dataclass
class Footprint:
    """Peak memory of the process (and of the GPU) and the output folder's size, by part."""

    peak_rss: int
    peak_gpu: int | None
    out: Path
    parts: dict[str, int] = field(default_factory=dict)  # "best/", "checkpoint-last/", ... -> bytes
    dropped_resume: int = 0  # bytes of a resume state removed after the run (a finished seed)

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    def describe(self) -> str:
        """One line: ``memory: peak 17.9 GB (process), ...; disk: OUT 347 MB (best/ 87 MB, ...)``."""
        gpu = f", {human(self.peak_gpu)} allocated on the GPU" if self.peak_gpu is not None else ""
        parts = ", ".join(f"{k} {human(v)}" for k, v in self.parts.items() if v)
        why = ""
        if self.parts.get(checkpoints.RESUME_DIR + "/"):
            why = (f"; {checkpoints.RESUME_DIR}/ is the weights and optimiser state for --resume (to train on with "
                   "more steps): delete it once the run is final")
        if self.dropped_resume:
            why = f"; its {checkpoints.RESUME_DIR}/ ({human(self.dropped_resume)}) was removed: a finished seed is never resumed"
        return f"memory: peak {human(self.peak_rss)} resident{gpu}; disk: {self.out} {human(self.total)} ({parts}){why}"


def measure(out: Path, device: str) -> Footprint:
    """The footprint of the run whose output folder is ``out``, on ``device``."""
    gpu = torch.cuda.max_memory_allocated(torch.device(device)) if device.startswith("cuda") else None
    return Footprint(peak_rss_bytes(), gpu, Path(out), folder_parts(out))


def folder_parts(out: Path) -> dict[str, int]:
    """Bytes of each sub-folder of ``out`` (best/, checkpoints/, checkpoint-last/ first), the files together."""
    out = Path(out)
    parts: dict[str, int] = {}
    if out.is_dir():
        for p in sorted(out.iterdir()):
            if p.name.endswith((".tmp", ".old")):
                continue
            parts[p.name + ("/" if p.is_dir() else "")] = folder_bytes(p)
    # the folders a user asks about first, then the small files together
    order = ["best/", "checkpoints/", checkpoints.RESUME_DIR + "/"]
    big = {k: parts.pop(k) for k in order if k in parts}
    small = sum(v for k, v in parts.items() if not k.endswith("/"))
    big.update({k: v for k, v in parts.items() if k.endswith("/")})
    if small:
        big["other files"] = small
    return big


def drop_resume_state(out: Path) -> int:
    """Remove ``out``'s resume state (weights + optimiser, about 3x the model); returns the bytes freed."""
    folder = Path(out) / checkpoints.RESUME_DIR
    size = folder_bytes(folder)
    shutil.rmtree(folder, ignore_errors=True)
    return size
