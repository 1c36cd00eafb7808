"""Encoding on several devices of one node (``--device cuda:0,cuda:1`` or ``all`` on run, compare, mteb,
analyze and audit; ``embench grid --devices``): the unique texts are split over one process per device,
each loads the model on its device and writes its vectors to the shared embedding cache (whose
write-once shards are safe for concurrent writers); the evaluation then reads every vector from the
cache. The vectors are the engine's own, so they equal one device's up to float noise (a text's
batch neighbours differ, as with any batch size).

>>> prefill_sharded("all-MiniLM-L6-v2", {}, texts, ["cuda:0", "cuda:1"], cache_dir)   # doctest: +SKIP
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from ..core.errors import EmbenchError
from ..encoding.cache import text_key
from ..encoding.engine import Engine, fill_views
from .loader import load_model


def split_texts(texts: Sequence[str], parts: int) -> list[list[str]]:
    """The unique texts in ``parts`` near-equal shares (round robin over the texts sorted by length, so
    each device gets long and short texts alike and finishes about when the others do)."""
    unique = sorted(dict.fromkeys(texts), key=lambda t: (len(t), text_key(t)))
    return [unique[i::parts] for i in range(parts)]


ViewSpec = tuple[int | None, str | None, bool]  # (layer, pooling, final_norm) of HFEncoder.view


def _fill_share(model: str, options: dict[str, Any], device: str, views: list[ViewSpec], texts: list[str], cache_dir: str,
                batch_size: int | None) -> list[str]:
    base = load_model(model, device=device, **options)
    engines = [Engine(base.view(*v), batch_size=batch_size, cache_dir=cache_dir) for v in views]
    fill_views(engines, texts)  # every view from one forward pass per batch, as on one device
    return [e.encoder.cache_key() for e in engines]


def prefill_sharded(model: str, options: dict[str, Any], texts: Sequence[str], devices: Sequence[str],
                    cache_dir: str | Path | None, batch_size: int | None = None,
                    expect_cache_keys: Sequence[str] | None = None,
                    views: Sequence[ViewSpec] = ((None, None, False),)) -> None:
    """Put the vectors of ``texts`` under each of ``views`` (of ``load_model(model, **options)``) in the cache
    at ``cache_dir``, encoded by one process per device. Every process must give the views the cache keys
    ``expect_cache_keys`` (this process's), else the vectors went to another cache: an error."""
    if not devices:
        raise EmbenchError("--devices: give at least one device, e.g. cuda:0,cuda:1")
    if cache_dir is None:
        raise EmbenchError("--devices needs the embedding cache (the shards meet there); drop --no-cache")
    shares = split_texts(texts, len(devices))
    # spawn, not fork: CUDA cannot be used in a forked child, and a fresh interpreter holds no locks. A process
    # pool of concurrent.futures, not multiprocessing's: a worker that dies (killed for memory, a crash) fails
    # the pass with BrokenProcessPool instead of leaving it waiting for a result that never comes
    with ProcessPoolExecutor(len(devices), mp_context=mp.get_context("spawn")) as pool:
        try:
            futures = [pool.submit(_fill_share, model, options, d, list(views), share, str(cache_dir), batch_size)
                       for d, share in zip(devices, shares, strict=True) if share]
            keys = {tuple(f.result()) for f in futures}
        except BrokenProcessPool as e:
            raise EmbenchError(f"--devices {','.join(devices)}: an encoding process died ({e}); the vectors the "
                               "others finished are in the cache, so the same command resumes from them") from None
    if len(keys) > 1 or (expect_cache_keys is not None and keys and keys != {tuple(expect_cache_keys)}):
        # a device whose default dtype differs (bf16 on one GPU, fp32 elsewhere) would fill another cache
        raise EmbenchError(f"--devices {','.join(devices)}: the devices encode under other settings than this process "
                           f"({sorted(keys)}); give --dtype so that every device uses the same")


def prefill_views(engines: Sequence[Engine], texts: Sequence[str], devices: Sequence[str]) -> None:
    """With several ``devices``: the texts that some engine lacks (in memory or in its cache) are encoded first,
    by one process per device, under every engine's encoder (views of one model loaded by name:
    :meth:`HFEncoder.view`), into the cache these engines then read. A model given as an object is an error."""
    if len(devices) < 2 or not texts:
        return
    missing = list(dict.fromkeys(t for e in engines for t in e.missing(texts)))
    if not missing:
        return  # nothing to load a model for in every process
    encoders = [e.encoder for e in engines]
    spec = getattr(encoders[0], "load_spec", None)
    if spec is None or any(getattr(e, "load_spec", None) != spec for e in encoders):
        raise EmbenchError(f"--device {','.join(devices)}: several devices need the model by name or folder (each "
                           f"device's process loads it); {encoders[0].name} was given as an object")
    views = [(e.settings.layer, e.settings.pooling, bool(e.settings.extra.get("final_norm"))) for e in encoders]
    cache = engines[0].cache
    prefill_sharded(spec[0], spec[1], missing, devices, cache.root if cache is not None else None,
                    engines[0].batch_size, expect_cache_keys=[e.cache_key() for e in encoders], views=views)
    for e in engines:  # the other processes' shards are read from now on
        if e.cache is not None:
            e.cache.refresh()


def several_devices(device: str | None) -> list[str]:
    """The devices of ``--device cuda:0,cuda:1`` or ``--device all`` (every CUDA device); [] for one device."""
    if not isinstance(device, str) or ("," not in device and device.strip().lower() != "all"):
        return []
    if device.strip().lower() == "all":
        import torch

        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise EmbenchError("--device all: this machine has no CUDA device; give --device cpu")
        return [f"cuda:{i}" for i in range(count)] if count > 1 else []
    return parse_devices(device)


def parse_devices(raw: str | None) -> list[str]:
    """``cuda:0,cuda:1`` -> ["cuda:0", "cuda:1"]."""
    if not raw:
        return []
    devices = [d.strip() for d in raw.split(",") if d.strip()]
    if not devices:
        raise EmbenchError(f"--devices {raw!r}: no device named; e.g. --devices cuda:0,cuda:1")
    return devices
