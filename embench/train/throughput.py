"""Training speed, measured over the training steps since the last log line (evaluation and saving left out):
steps per second, tokens per second over every process, and model TFLOP/s (6 N FLOPs per token, forward and
backward, as in Kaplan et al. 2020 and PaLM's MFU) to set against a GPU's peak."""

from __future__ import annotations

import time
from typing import Any


class Throughput:
    def __init__(self, inner: Any, world_size: int):
        self.inner, self.world_size = inner, world_size  # the SentenceModel, which counts the tokens it encodes
        self.n_params = sum(p.numel() for p in inner.encoder.parameters())
        self.restart()

    def restart(self) -> None:
        self.t, self.steps = time.perf_counter(), 0
        self.tokens, self.padded = getattr(self.inner, "tokens", 0), getattr(self.inner, "padded_tokens", 0)

    def stepped(self) -> None:
        self.steps += 1

    def read(self) -> dict[str, float]:
        """The speed since the last reading (which starts a new window)."""
        dt = max(time.perf_counter() - self.t, 1e-9)
        tps = (getattr(self.inner, "tokens", 0) - self.tokens) * self.world_size / dt
        padded = (getattr(self.inner, "padded_tokens", 0) - self.padded) * self.world_size / dt
        # padded: what the device computed, padding included (a batch is padded to its longest text)
        speed = {"steps_per_s": self.steps / dt, "tokens_per_s": tps, "padded_tokens_per_s": padded,
                 "model_tflops_per_s": 6 * self.n_params * tps / 1e12}
        self.restart()
        return speed

    def after_pause(self) -> None:
        """After evaluating or saving: a window with no step yet starts now, so the pause is not counted."""
        if self.steps == 0:
            self.restart()
