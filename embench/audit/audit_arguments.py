"""What :func:`embench.audit.protocol.audit` is given, checked before any model loads, as ``embench audit``'s options
are (a Python caller passes what the CLI's parser would refuse: ``reported={"STS12": "abc"}`` failed in a subtraction
after every variant was scored, ``sample=2.5`` inside numpy, and ``sample=0`` re-encoded nothing and then reported
no change at every batch size)."""

from __future__ import annotations

import math
from typing import Any

from ..core.arguments import is_seed, whole_number
from ..core.defaults import SEED_MAX
from ..core.errors import EmbenchError
from ..encoding.vector_axes import axis_values
from ..evaluation.api_arguments import batch_arguments, interval_arguments
from .dimensions import VECTOR_KNOBS  # the knobs whose values --truncate-dim and --quantize set
from .reported_values import checked_numbers


def checked_reported(reported: Any) -> dict[str, float] | None:
    """``reported`` (task -> published number, x100) with canonical task names and float values that keep their
    printed decimals; refused as ``--reported`` is: a task given twice (two aliases), a task that is not STS, numbers
    that all look like fractions (:func:`embench.audit.reported_values.checked_numbers`)."""
    if reported is None:
        return None
    if not isinstance(reported, dict):
        raise EmbenchError(f"reported must be a mapping of task names to published numbers, not {type(reported).__name__}")
    for name, value in reported.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise EmbenchError(f"reported: {value!r} (for {name}) is not a finite number")
    return checked_numbers([("", str(name), value) for name, value in reported.items()], "reported", "reported")


def check_audit_arguments(tolerance: Any, sample: Any, sample_seed: Any, truncate_dim: Any, quantize: Any,
                          knobs: list[str], batch_size: Any, batch_tokens: Any, ci: Any, resamples: Any) -> None:
    """The audit's numbers within the ranges its command line takes, its dimensions and precisions as
    :func:`embench.evaluate` takes them (one value or several) and only with a knob they are the values of, its batch
    sizes as the engine takes them, and ``resamples`` only with ``ci`` (each was dropped in silence, or said once the
    model had loaded and every task had been read)."""
    if isinstance(tolerance, bool) or not isinstance(tolerance, int | float) or not math.isfinite(tolerance) or tolerance < 0:
        raise EmbenchError(f"tolerance must be a finite number of at least 0 (x100), not {tolerance!r}")
    whole_number(sample, "sample", least=1)
    if not is_seed(sample_seed):
        raise EmbenchError(f"sample_seed must be a whole number from 0 to {SEED_MAX}, not {sample_seed!r}")
    if any(axis_values(truncate_dim, quantize)) and not set(VECTOR_KNOBS) & set(knobs):
        raise EmbenchError("--truncate-dim and --quantize set the values of the truncate-dim and quantize knobs: add one "
                           "of them to --knobs")
    batch_arguments(batch_size, batch_tokens)
    interval_arguments(ci, resamples, None)
