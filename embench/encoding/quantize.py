"""Embedding quantisation as sentence-transformers does it, and the float form its evaluators score.

``quantize`` follows ``sentence_transformers.util.quantization.quantize_embeddings`` (6.x): int8/uint8
split each dimension's calibrated range [min, max] into 255 equal steps (a step of 0 counts as 1) and keep
``floor((x - min) / step)`` clipped to [0, 255], less 128 for int8; binary/ubinary keep the sign bits
(``x > 0``), packed eight to a byte, less 128 for binary. ``scored_form`` is what
``EmbeddingSimilarityEvaluator`` then compares: the integers as float32, and binary/ubinary unpacked to
0/1 bits (both precisions give the same bits, hence the same scores). Written here in numpy rather
than imported, because importing sentence-transformers costs about 7 s; ``tests/test_truncate_quantize.py``
checks both functions against sentence-transformers' own on the same inputs.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import EmbenchError

PRECISIONS = ("float32", "int8", "uint8", "binary", "ubinary")  # sentence-transformers' names, float32 first
CALIBRATED = ("int8", "uint8")  # the precisions whose buckets need ranges from a calibration set


def check_precision(precision: str, option: str = "--quantize") -> str:
    """``precision`` when it is one of :data:`PRECISIONS`, else an error naming ``option`` and the choices."""
    if precision not in PRECISIONS:
        raise EmbenchError(f"{option} {precision!r} is not a precision; choose one of: {', '.join(PRECISIONS)}")
    return precision


def calibration_ranges(calibration: np.ndarray) -> np.ndarray:
    """The int8/uint8 ranges of a calibration set: each dimension's minimum and maximum, shape (2, dim)."""
    if calibration.ndim != 2 or len(calibration) < 2:
        raise EmbenchError(f"int8/uint8 quantisation calibrates on several vectors; got an array of shape {calibration.shape}")
    return np.vstack((calibration.min(axis=0), calibration.max(axis=0)))


def quantize(vectors: np.ndarray, precision: str, ranges: np.ndarray | None = None) -> np.ndarray:
    """``vectors`` (n, dim float) in ``precision``; int8/uint8 bucket by ``ranges`` (default: the vectors' own)."""
    check_precision(precision, "precision")
    vectors = np.asarray(vectors)
    if precision == "float32":
        return vectors.astype(np.float32)
    if precision in CALIBRATED:
        ranges = (calibration_ranges(vectors) if ranges is None else ranges).astype(np.float32, copy=False)
        starts = ranges[0]
        steps = (ranges[1] - starts) / 255
        steps = np.where(steps == 0, 1, steps)  # a constant dimension: one bucket, not a division by zero
        buckets = np.clip(np.floor((vectors - starts) / steps), 0, 255)
        return buckets.astype(np.uint8) if precision == "uint8" else (buckets - 128).astype(np.int8)
    bits = np.packbits(vectors > 0, axis=-1)
    return bits if precision == "ubinary" else (bits.astype(np.int16) - 128).astype(np.int8)


def scored_form(quantized: np.ndarray, precision: str) -> np.ndarray:
    """The float32 vectors sentence-transformers' ``EmbeddingSimilarityEvaluator`` compares for ``precision``:
    integers as they are, packed bits unpacked to 0/1 (padding bits past the last dimension are 0, as there,
    and add nothing to a dot product or a norm)."""
    if precision == "binary":
        quantized = quantized.astype(np.int16) + 128
    if precision in ("binary", "ubinary"):
        quantized = np.unpackbits(quantized.astype(np.uint8), axis=1)
    return quantized.astype(np.float32)
