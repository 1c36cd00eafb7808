"""Encoding on several devices of one node (``--device cuda:0,cuda:1`` or ``all`` on run, compare, mteb,
analyze and audit; ``embench grid --devices``): the unique texts are split over one process per device,
each loads the model on its device and writes its vectors to the shared embedding cache (whose
write-once shards are safe for concurrent writers); the evaluation then reads every vector from the
cache. The vectors are the engine's own, so they equal one device's up to float noise (a text's
batch neighbours differ, as with any batch size).

>>> prefill_sharded("all-MiniLM-L6-v2", {}, texts, ["cuda:0", "cuda:1"], cache_dir)   # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from ..core.errors import EmbenchError
from ..encoding.cache import keyed_texts, text_key
from ..encoding.engine import Engine, fill_views
from .device_choice import pick_device
from .loader import load_model

STOP_SECONDS = 10.0  # how long a stopped encoding process may take to flush its vectors before it is ended


def split_texts(texts: Sequence[str], parts: int) -> list[list[str]]:
    """The unique texts in ``parts`` near-equal shares (round robin over the texts sorted by length, so
    each device gets long and short texts alike and finishes about when the others do)."""
    keyed = keyed_texts(list(dict.fromkeys(texts)))  # a text UTF-8 cannot hold: an error naming it, not a key's traceback
    unique = [t for _, t in sorted(keyed, key=lambda kt: (len(kt[1]), kt[0]))]
    return [unique[i::parts] for i in range(parts)]


ViewSpec = tuple[int | None, str | None, bool]  # (layer, pooling, final_norm) of HFEncoder.view


def _fill_share(model: str, options: dict[str, Any], device: str, views: list[ViewSpec], texts: list[str], cache_dir: str,
                batch_size: int | None, progress: bool = False) -> list[str]:
    base = load_model(model, device=device, **options)
    engines = [Engine(base.view(*v), batch_size=batch_size, cache_dir=cache_dir, progress=progress) for v in views]
    fill_views(engines, texts)  # every view from one forward pass per batch, as on one device
    return [e.encoder.cache_key() for e in engines]


def prefill_sharded(model: str, options: dict[str, Any], texts: Sequence[str], devices: Sequence[str],
                    cache_dir: str | Path | None, batch_size: int | None = None,
                    expect_cache_keys: Sequence[str] | None = None,
                    views: Sequence[ViewSpec] = ((None, None, False),), option: str = "--devices",
                    progress: bool = False) -> None:
    """Put the vectors of ``texts`` under each of ``views`` (of ``load_model(model, **options)``) in the cache
    at ``cache_dir``, encoded by one process per device. Every process must give the views the cache keys
    ``expect_cache_keys`` (this process's), else the vectors went to another cache: an error. ``option`` is
    the option the errors name (``--device`` of run, compare, mteb, analyze and audit). With ``progress`` the first
    device's process says how its share goes (the shares are near equal, so the others' go alike)."""
    if not devices:
        raise EmbenchError(f"{option}: give at least one device, e.g. cuda:0,cuda:1")
    if cache_dir is None:
        raise EmbenchError(f"{option} needs the embedding cache (the shards meet there); drop --no-cache")
    shares = split_texts(texts, len(devices))
    # spawn, not fork: CUDA cannot be used in a forked child, and a fresh interpreter holds no locks. A process
    # pool of concurrent.futures, not multiprocessing's: a worker that dies (killed for memory, a crash) fails
    # the pass with BrokenProcessPool instead of leaving it waiting for a result that never comes
    with ProcessPoolExecutor(len(devices), mp_context=mp.get_context("spawn"), initializer=_watch_parent,
                             initargs=(os.getpid(),)) as pool:
        try:
            futures = [pool.submit(_fill_share, model, options, d, list(views), share, str(cache_dir), batch_size,
                                   progress and i == 0)
                       for i, (d, share) in enumerate(zip(devices, shares, strict=True)) if share]
            keys = {tuple(f.result()) for f in futures}
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the pool's exit would wait for every worker's whole share
            _stop_workers(pool)
            raise
        except BrokenProcessPool as e:
            raise EmbenchError(f"{option} {','.join(devices)}: an encoding process died ({e}); the vectors the "
                               "others finished are in the cache, so the same command resumes from them") from None
    if len(keys) > 1 or (expect_cache_keys is not None and keys and keys != {tuple(expect_cache_keys)}):
        # a device whose default dtype differs (bf16 on one GPU, fp32 elsewhere) would fill another cache
        raise EmbenchError(f"{option} {','.join(devices)}: the devices encode under other settings than this process "
                           f"({sorted(keys)}); give --dtype so that every device uses the same")


def _watch_parent(parent: int) -> None:
    """In each encoding process: exit once ``parent`` is gone (killed outright, kill -9, so it could stop nobody).
    An orphan would encode on for minutes and hold the output pipe a grid reads its job's lines from."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="embench-parent-watch", daemon=True).start()


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Cancel the shares not begun and stop the encoding processes now: SIGINT first (each flushes the vectors it
    holds to the cache, as on Ctrl-C), then, after a bound, SIGTERM. A process ended mid-write leaves no shard that
    is read as good: a shard is written under a temporary name and renamed whole."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # concurrent.futures keeps them there
    # the pool's manager thread reaps the processes too, and shutdown(wait=False) drops the pool's reference to it (so
    # the ``with`` block's own shutdown cannot wait for it): kept here, and joined last, else a process it was reaping
    # still reads as alive after this returns
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        with contextlib.suppress(OSError):
            if p.is_alive() and p.pid is not None:
                os.kill(p.pid, signal.SIGINT)
    deadline = time.monotonic() + STOP_SECONDS
    for p in processes:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.terminate()
            p.join(STOP_SECONDS)
    if manager is not None:
        manager.join(STOP_SECONDS)


def prefill_views(engines: Sequence[Engine], texts: Sequence[str], devices: Sequence[str]) -> None:
    """With several ``devices``: the texts that some engine lacks (in memory or in its cache) are encoded first,
    by one process per device, under every engine's encoder (views of one model loaded by name:
    :meth:`HFEncoder.view`), into the cache these engines then read. A model given as an object is an error."""
    if len(devices) < 2 or not texts:
        return
    lacking = [e.missing(texts) for e in engines]
    missing = list(dict.fromkeys(t for mine in lacking for t in mine))
    if not missing:
        return  # nothing to load a model for in every process
    encoders = [e.encoder for e in engines]
    spec = getattr(encoders[0], "load_spec", None)
    if spec is None or any(getattr(e, "load_spec", None) != spec for e in encoders):
        raise EmbenchError(f"--device {','.join(devices)}: several devices need the model by name or folder (each "
                           f"device's process loads it); {encoders[0].name} was given as an object")
    views = [(e.settings.layer, e.settings.pooling, bool(e.settings.extra.get("final_norm"))) for e in encoders]
    cache = engines[0].cache
    start = time.perf_counter()
    prefill_sharded(spec[0], spec[1], missing, devices, cache.root if cache is not None else None,
                    engines[0].batch_size, expect_cache_keys=[e.cache_key() for e in encoders], views=views,
                    option="--device", progress=engines[0].progress)
    elapsed = time.perf_counter() - start
    for e, mine in zip(engines, lacking, strict=True):  # the other processes' shards are read from now on
        if e.cache is not None:
            e.cache.refresh()
        # encoded by this run, though read from the cache: the records count them and the pass's time so
        e.encoded_elsewhere.update(text_key(t) for t in mine)
        e.stats["encoded"] += len(mine)
        e.stats["encode_seconds"] += elapsed / len(engines)  # as one process's pass of several views counts it


def several_devices(device: str | None) -> list[str]:
    """The devices of ``--device cuda:0,cuda:1`` or ``--device all`` (every CUDA device); [] for one device.
    Each is checked here, before any model loads: a device this machine lacks costs nothing."""
    if not isinstance(device, str) or ("," not in device and device.strip().lower() != "all"):
        return []
    if device.strip().lower() == "all":
        import torch

        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise EmbenchError("--device all: this machine has no CUDA device; give --device cpu")
        return [f"cuda:{i}" for i in range(count)] if count > 1 else []
    devices = parse_devices(device, "--device")
    for d in devices:  # every one, not only the first (which this process loads): else a worker finds it out
        pick_device(d, "--device")
    return devices


def parse_devices(raw: str | None, option: str = "--devices") -> list[str]:
    """``cuda:0,cuda:1`` -> ["cuda:0", "cuda:1"]; ``option`` is the option the error names (``--device`` of run)."""
    if not raw:
        return []
    devices = [d.strip() for d in raw.split(",") if d.strip()]
    if not devices:
        raise EmbenchError(f"{option} {raw!r}: no device named; e.g. {option} cuda:0,cuda:1")
    return devices
