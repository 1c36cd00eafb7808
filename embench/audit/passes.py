"""How the audit encodes: one shared forward pass for the baseline and every pooling view, and seeded
samples for the knobs whose only question is invariance.

A default audit used to encode the suite once per pooling value, once per batch size (batch 1 over
26k texts the slowest of all) and once in bf16. Now:

* the baseline and every pooling the audit tries are views of one model (:meth:`HFEncoder.view`),
  served by ONE forward pass per batch over the texts of every protocol variant (SentEval and raw
  text, SICK-R's full split, the regressor's training pairs); each view lands in the embedding cache
  under its own key, so each variant's :func:`embench.evaluate` finds every vector there;
* the batch-size knob asks whether a vector depends on its batch: a seeded sample of the suite's
  texts (2,000 by default) is re-encoded at each batch size and compared with the baseline's
  vectors; the variant's scores use the re-encoded vectors for the sample and the baseline's for
  the rest, and the table says so (``--full-batch-check`` encodes everything again);
* bf16/fp16 on a CPU without native arithmetic (about 6x slower than fp32) go the same way
  (``--full-dtype-check`` for a full pass); on a GPU, or a CPU with bf16 instructions, they are
  full passes;
* ``max_length`` changes the tokenisation itself, but only of the texts it truncates: the texts whose
  token ids differ under the shorter maximum are re-encoded, and every other text keeps the baseline's
  vector, computed from the same ids (``--full-length-check`` encodes everything again).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core.hashing import stable_hash
from ..data.root import DataRoot
from ..encoding.engine import Engine, fill_views
from ..evaluation.protocols import EvalProtocol
from ..models.encoder import HFEncoder
from ..tasks import TASKS
from ..tasks.recorded_protocol import seeded_protocol

DEFAULT_SAMPLE = 2000


@dataclass
class PassLog:
    """Every forward pass the audit ran: what it encoded, how many views it served, and why."""

    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(self, what: str, texts: int, views: int, seconds: float, why: str) -> None:
        if texts:
            self.rows.append({"pass": what, "texts": int(texts), "views": int(views), "seconds": round(seconds, 1), "why": why})

    def summary(self) -> str:
        if not self.rows:
            return "no forward pass: every vector came from the embedding cache or a stored record"
        return (f"{len(self.rows)} forward pass(es) over {sum(r['texts'] for r in self.rows):,} texts in "
                f"{sum(r['seconds'] for r in self.rows):.0f} s")


def suite_texts(tasks: Sequence[str], protocols: Sequence[dict[str, Any]], root: DataRoot) -> list[str]:
    """Every text the tasks read under any of ``protocols`` (each a dict of protocol options), once each."""
    texts: dict[str, None] = {}
    for proto in protocols:
        protocol = EvalProtocol.from_options(**proto)
        for name in tasks:  # under the seed evaluate() runs it with (an MTEB task's own where none is given)
            task = TASKS.get(name)
            texts.update(dict.fromkeys(task.prepare(root, seeded_protocol(task, protocol, proto.get("seed") is not None)).texts))
    return list(texts)


def shared_pass(base: HFEncoder, poolings: Sequence[str], texts: list[str], cache: Path | None, batch_size: int | None,
                progress: bool, log: PassLog, devices: Sequence[str] = ()) -> Engine:
    """Encode ``texts`` once for the baseline and every pooling in ``poolings`` (views of ``base``);
    returns the baseline's engine (its vectors in memory). With several ``devices`` the pass is split over
    one process per device, which fill the cache this process then reads."""
    # an encoder without views (an ensemble) shares nothing: its pooling variants are full passes of their own
    views = [base] + ([base.view(None, p) for p in dict.fromkeys(poolings) if p != base.pooling] if hasattr(base, "view") else [])
    engines = [Engine(v, batch_size=batch_size, cache_dir=cache, progress=progress) for v in views]
    start = time.perf_counter()
    if devices:
        from ..models.devices import prefill_views

        prefill_views(engines, texts, devices)
    fill_views(engines, texts)
    encoded = max(e.stats["encoded"] for e in engines)
    names = ", ".join(str(getattr(v, "pooling", v.name)) for v in views)
    log.add("baseline + pooling views", encoded, sum(e.stats["encoded"] > 0 for e in engines), time.perf_counter() - start,
            f"one pass serves every pooling ({names}) over the texts of every protocol variant")
    return engines[0]


def sample_texts(texts: Sequence[str], n: int, seed: int) -> list[str]:
    """A seeded sample of ``n`` distinct texts (all of them when there are fewer), in a fixed order."""
    pool = sorted(set(texts))
    if n >= len(pool):
        return pool
    idx = np.random.default_rng(seed).choice(len(pool), size=n, replace=False)
    return [pool[i] for i in sorted(idx)]


class SampledEncoder:
    """The baseline's vectors for every text, except a sample re-encoded under one knob's value: what the
    sampled variants score with (no encoding of its own; an engine over it only looks vectors up)."""

    def __init__(self, base: HFEncoder, vectors: dict[str, np.ndarray], knob: str, value: Any, n_sample: int):
        self.base, self.vectors, self.name = base, vectors, base.name
        self.setting = {knob: value, "sampled_texts": n_sample}

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        return np.zeros(len(texts), dtype=np.int64)

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])

    def cache_key(self) -> str:
        return stable_hash({"base": self.base.cache_key(), **self.setting}, 24)

    def describe(self) -> dict[str, Any]:
        return {**self.base.describe(), **self.setting}


def retokenised_texts(base: HFEncoder, variant: HFEncoder, texts: Sequence[str]) -> list[str] | None:
    """The texts whose token ids under ``variant`` differ from the baseline's (e.g. those a shorter
    maximum length truncates): the only ones whose vectors can change. None when an encoder cannot
    show its ids (then the variant needs a full pass)."""
    if not (hasattr(base, "pretokenize") and hasattr(variant, "pretokenize")):
        return None
    ours, theirs = base.pretokenize(list(texts))["input_ids"], variant.pretokenize(list(texts))["input_ids"]
    return [t for t, a, b in zip(texts, ours, theirs, strict=True) if a != b]


def sampled_variant(base_engine: Engine, variant_encoder: HFEncoder, batch_size: int, sample: list[str], knob: str,
                    value: Any, baseline_texts: list[str], progress: bool, log: PassLog,
                    why: str, what: str = "sample") -> tuple[SampledEncoder, float]:
    """Re-encode ``sample`` with ``variant_encoder`` at ``batch_size`` (no cache: the point is to encode);
    returns the encoder the variant is scored with and the largest |difference| of a vector coordinate
    from the baseline's. ``what`` names the re-encoded texts in the pass log."""
    start = time.perf_counter()
    fresh = Engine(variant_encoder, batch_size=batch_size, cache_dir=None, progress=progress).embed(sample)
    log.add(f"{knob}={value} ({what})", len(sample), 1, time.perf_counter() - start, why)
    baseline = base_engine.embed(baseline_texts)
    vectors = dict(zip(baseline_texts, baseline, strict=True))
    diff = float(np.abs(fresh - np.stack([vectors[t] for t in sample])).max()) if sample else 0.0
    vectors.update(zip(sample, fresh, strict=True))
    return SampledEncoder(base_engine.encoder, vectors, knob, value, len(sample)), diff


def sampled_note(diffs: dict[str, float], n: int, seed: int) -> str | None:
    """The table's note on the sampled rows."""
    if not diffs:
        return None
    largest = "; ".join(f"{label}: {d:.1e}" for label, d in diffs.items())
    return (f"{', '.join(diffs)}: {n:,} texts (seed {seed}) re-encoded, the others keep the baseline's vectors; "
            f"largest |change| of a vector coordinate: {largest} (--full-batch-check / --full-dtype-check for full passes)")

