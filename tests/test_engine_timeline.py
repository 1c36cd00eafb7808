"""benchmarks/engine_timeline.py's simulated device: a batch starts when the host has queued it and the device has
finished the one before, and a wait on it lasts until then."""

from __future__ import annotations

import time

import pytest


@pytest.fixture(scope="module")
def timeline(benchmark_script):
    return benchmark_script("engine_timeline")


def test_batches_queue_behind_each_other_and_a_wait_lasts_until_the_device_is_done(timeline):
    device = timeline.Device(seconds_per_token=0.01)
    t0 = time.perf_counter()
    device.run(3)  # 30 ms from now
    device.run(2)  # queued while the first runs: starts when it ends, 20 ms more
    assert device.busy == pytest.approx(0.05)
    assert device.first_start >= t0 and device.free_at == pytest.approx(device.first_start + 0.05)
    device.wait(device.free_at)
    assert time.perf_counter() >= device.free_at
    time.sleep(0.02)  # the device idles: the next batch starts when it is queued, not when the last ended
    before = time.perf_counter()
    device.run(1)
    assert device.free_at >= before + 0.01 and device.busy == pytest.approx(0.06)
    device.reset()
    assert (device.busy, device.first_start, device.free_at) == (0.0, None, 0.0)
