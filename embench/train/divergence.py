"""A run that stops on a NaN, exploded weights or a collapse, with the checkpoint worth resuming from."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import EmbenchError
from . import checkpoints


class TrainingDivergedError(EmbenchError):
    """The loss or a gradient became NaN/inf; the message names the last good checkpoint."""


def diverged(out: Path, best_score: float | None, what: str, since: int | None = None) -> None:
    """Stop, naming the last checkpoint worth resuming from (written before ``since`` when given)."""
    resume_dir = out / checkpoints.RESUME_DIR
    at = checkpoints.saved_step(resume_dir) if (resume_dir / "state.pt").is_file() else None
    if at is not None and since is not None and at >= since:
        last = f"The resume checkpoint {resume_dir} was written after that began: start again with a lower --lr"
    else:
        last = (f"The last good checkpoint, left untouched, is {resume_dir} (step {at}): continue from it with "
                f"--resume and a lower --lr" if at is not None else
                "No resume checkpoint was written before it (--save-steps): start again with a lower --lr")
    kept = (f"; the best checkpoint is {out / checkpoints.BEST_DIR} ({best_score * 100:.2f})"
            if best_score is not None else "")
    raise TrainingDivergedError(f"{what}. {last}{kept}. Or check the data.")
