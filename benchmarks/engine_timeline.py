"""The engine's GPU path against a simulated device, on any machine: how much of a pass the device would be busy.

A GPU runs queued work while the host goes on; the host waits only where it reads a result back. Here the model's
forward queues nothing real: it adds the batch's device time (``--device-seconds`` for the whole pass, shared in
proportion to padded tokens, BERT-base's 0.26 s of sts-all kernels on an H200 by default) to a simulated device
timeline that starts each batch when both the host has queued it and the device has finished the one before. The
host waits where the engine does on CUDA: a chunk of vectors is read back only once the device has finished the
batches queued before its copy (``encoding/host_copies.py``; here a sleep until then). Pooling is a zero tensor
(a kernel launch on a GPU, not host work). Everything else is the engine's own host work, as run here: chunked
tokenisation on a second thread, padding, batches, vectors handed back, the returned array.

    EMBENCH_DATA=... python benchmarks/engine_timeline.py --chunks 4096/4096,512/4096 --repeats 5

Printed per setting: the pass's wall time, the device's busy share of it (device seconds over wall), when the device
got its first batch, and how long after its last batch the call returned. The host here is this machine's: a slower
host than a GPU server's (2 cores against 16 for tokenisation) makes every share lower, and ``--device-seconds``
can be scaled up to keep the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # engine_host.py and encode_gpu.py beside this file; embench from this checkout


class Device:
    """A device timeline: each batch starts once queued and once the one before has finished."""

    def __init__(self, seconds_per_token: float):
        self.per_token = seconds_per_token
        self.reset()

    def reset(self) -> None:
        self.free_at, self.first_start, self.busy, self.tokens = 0.0, None, 0.0, 0

    def run(self, padded_tokens: int) -> None:
        now = time.perf_counter()
        start = max(now, self.free_at)
        cost = padded_tokens * self.per_token
        self.first_start = start if self.first_start is None else self.first_start
        self.free_at, self.busy, self.tokens = start + cost, self.busy + cost, self.tokens + padded_tokens

    def wait(self, until: float) -> None:
        delay = until - time.perf_counter()
        if delay > 0:
            time.sleep(delay)


def install(device: Device, hidden: int) -> torch.nn.Module:
    """The engine's pooling and vector hand-back bound to ``device`` (the host waits as on CUDA); returns the model
    whose forward queues a batch on it."""
    from engine_host import NoForward

    import embench.encoding.host_copies as host_copies
    import embench.models.encoder as encoder_mod

    class DeviceModel(NoForward):
        def forward(self, input_ids=None, **kw):
            device.run(int(input_ids.numel()))
            return super().forward(input_ids=input_ids[:, :1], **kw)  # one position: no host compute to speak of

    encoder_mod.HFEncoder._pool = lambda self, hidden_states, mask: torch.zeros(mask.shape[0], hidden)

    class DeviceCopies(host_copies.HostCopies):
        def _ship(self):
            ready = device.free_at  # the copy is queued after every batch queued so far
            super()._ship()
            self._in_flight = (*self._in_flight[:2], ready)

        def _land(self):
            if self._in_flight is not None and self._in_flight[2] is not None:
                device.wait(self._in_flight[2])
                self._in_flight = (*self._in_flight[:2], None)
            super()._land()

    host_copies.HostCopies = DeviceCopies
    return DeviceModel(hidden)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device-seconds", type=float, default=0.26, help="the device's time for the whole pass")
    ap.add_argument("--chunks", default="4096/4096", help="first/size tokenisation chunks to compare, comma-separated")
    ap.add_argument("--batch-tokens", type=int, default=65536)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None, help="also append the table to this markdown file")
    args = ap.parse_args()

    from encode_gpu import chunk_sizes, sts_all_texts
    from engine_host import gpu_path_on_cpu

    from embench.encoding.engine import Engine

    texts = sts_all_texts()
    probe = Device(0.0)
    enc = gpu_path_on_cpu(install(probe, args.hidden))
    # the device's seconds per padded token: the pass's padded tokens counted once, with the default chunks
    Engine(enc, batch_size=10**9, batch_tokens=args.batch_tokens, cache_dir=None).embed(texts)
    probe.per_token = args.device_seconds / probe.tokens
    settings = [tuple(int(x) for x in c.split("/")) for c in args.chunks.split(",") if c.strip()]
    rows: dict[tuple[int, int], list[dict]] = {s: [] for s in settings}
    for _ in range(args.repeats):
        for first, size in settings:
            with chunk_sizes(first, size):
                probe.reset()
                start = time.perf_counter()
                Engine(enc, batch_size=10**9, batch_tokens=args.batch_tokens, cache_dir=None).embed(texts)
                end = time.perf_counter()
            rows[(first, size)].append({"wall": end - start, "busy": probe.busy / (end - start),
                                        "first": probe.first_start - start, "after_last": end - probe.free_at})
    import os
    import platform

    head = (f"{len(texts):,} texts, device {args.device_seconds:.3f} s a pass, {args.batch_tokens:,}-token batches, "
            f"{os.cpu_count()} cores ({platform.machine()}), TOKENIZERS_PARALLELISM="
            f"{os.environ.get('TOKENIZERS_PARALLELISM', 'unset')}; medians of {args.repeats}")
    lines = [head, "", "| chunks | wall s | device busy | first batch at | returned after the last batch |",
             "|---|---:|---:|---:|---:|"]
    for (first, size), got in rows.items():
        med = {k: statistics.median(r[k] for r in got) for k in got[0]}
        lines.append(f"| {first}/{size} | {med['wall']:.3f} | {100 * med['busy']:.0f} % | {1e3 * med['first']:.0f} ms | "
                     f"{1e3 * med['after_last']:.0f} ms |")
    print("\n".join(lines))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("a") as fh:
            fh.write("\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main()
