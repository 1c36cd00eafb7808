"""CUDA graphs for the engine's forward passes, one per bucketed batch shape (``--cuda-graphs``).

On a GPU a small encoder is host-bound: BERT-base's pass over sts-all ran 257 ms of kernels in 0.62 s
(``reports/benchmarks/encode_gpu.md``), and each of its forwards issues some 320 operations one by one
(counted with the torch profiler). A CUDA graph replays a captured forward's kernels in one launch, but
only at the shape it was captured at, and length-sorted batches come in almost every shape. With graphs
on, each batch is therefore padded to a bucketed shape (:meth:`ShapeGraphs.widths`, :meth:`ShapeGraphs.shape`):

* its width (its longest text) rounds up to a quarter of its power of two, at least 8 tokens (8, 16, 24,
  ..., 64, 80, 96, 112, 128, 160, ...; at most the maximum length): a row gains at most a quarter of its
  width, and a maximum length of 512 has 20 widths;
* its texts are cut by the token budget against that width, so a full batch has the width's fixed row
  count ``budget // width``; a shorter one (the last of a width in a tokenisation chunk) rounds up to a
  multiple of an eighth of it.

On the 26,083 sts-all texts (BERT's tokenizer, the engine's own batching: ``benchmarks/cuda_graph_shapes.py``),
the 65,536-token budget makes 13 batches in 7 shapes running 1.76x the real tokens, against 12 shapes and
1.54x for the engine's own padding; 32,768 makes 20 batches in 9 shapes at 1.52x, against 17 and 1.30x.
Coarser widths (``MIN_WIDTH_STEP = 16``) gave 1.93x; the fixed rows alone (``ROW_STEPS = 1``) 5 shapes at
2.29x: the waste is mostly in the width of short texts and in the rows of a chunk's last batches.
Padding rows and columns carry attention mask 0 (an added row has one pad token under mask 1, so no row is
wholly masked) and are dropped after pooling, so a text's vector is the one its unpadded batch gives, to
float rounding (``tests/test_cuda_graphs.py``).

A shape's first batch runs eagerly; its graph is captured at its second, after a warm-up run on a side
stream, into one memory pool that all the graphs share (PyTorch's "CUDA Graphs" notes, whole-network capture
and sharing memory across captures). A capture costs about two eager forwards and a device synchronisation,
so a shape met once (the last, short batch of a width in one chunk) never pays for one; torch.compile's
CUDA graph trees likewise warm up on a first call and record on the second. The notes ask graphs sharing a
pool to replay in capture order; what that order protects is one graph's outputs from another's replay,
and here each replay's outputs are copied out, on the same stream, before the next replay. A pass that the graphs cannot serve runs eagerly, said
once in a log warning: a failed capture, GPU memory running out, or outputs too large to hold.
"""

from __future__ import annotations

import logging
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

log = logging.getLogger(__name__)
MIN_WIDTH_STEP = 8
ROW_STEPS = 8  # a batch's rows: a multiple of an eighth of its width's fixed row count
HELD_BYTES = 1 << 30  # the graphs' static outputs held at most (every-layer x every-pooler passes would hold GBs)
MAX_GRAPHS = 128
CAPTURE_ON_USE = 2  # a shape's graph is captured at its second batch


def shape_graphs(device: str, max_length: int) -> ShapeGraphs | None:
    """The graphs of a model loaded with ``cuda_graphs=True`` on ``device``; off CUDA a warning and None."""
    if str(device).startswith("cuda"):
        return ShapeGraphs(max_length)
    warnings.warn(f"--cuda-graphs (cuda_graphs=True) has no effect on {device}: CUDA graphs replay GPU kernels; "
                  "encoding goes on as usual", stacklevel=3)
    return None


def bucket_width(width: int, max_length: int) -> int:
    """``width`` rounded up to its bucket: steps of a quarter of its power of two, at least 8, at most ``max_length``."""
    step = max(MIN_WIDTH_STEP, 1 << max(0, int(width).bit_length() - 3))
    return max(int(width), min(-(-int(width) // step) * step, max_length))


def bucket_rows(texts: int, width: int, batch_size: int | None, batch_tokens: int | None) -> int:
    """The rows of a batch of ``texts`` at bucketed ``width``: the width's fixed row count (the budget's texts at that
    width, under the texts cap), or for fewer texts the next multiple of an eighth of it."""
    caps = [c for c in (batch_size, max(1, batch_tokens // width) if batch_tokens else None) if c is not None]
    full = max(min(caps, default=texts), texts)  # never fewer rows than texts (a caller that cut by other widths)
    unit = -(-full // ROW_STEPS)
    return min(full, -(-texts // unit) * unit)


@dataclass
class _Shape:
    inputs: dict[str, Any]  # the static inputs, copied into before each run
    outputs: list[Any]  # the static outputs of the graph (empty without one)
    graph: Any  # a torch.cuda.CUDAGraph, or None: run the forward itself (capture=False)
    forward: Any  # the forward pass over ``inputs``

    def run(self) -> list[Any]:
        if self.graph is None:
            return self.forward()
        self.graph.replay()
        return self.outputs


class ShapeGraphs:
    """The CUDA graphs of one loaded model, shared by its views (:meth:`HFEncoder.view`), one per (views, shape).

    The engine's batching asks it for the padded shapes (:meth:`widths`, :meth:`shape`) and its forward goes
    through :meth:`encode_views`, which takes :meth:`HFEncoder.encode_views`'s arguments. ``capture=False`` runs
    the same protocol without the graph (static inputs copied into, the forward run on them, the outputs
    cloned out and cut to the batch's texts): on a CPU, where the tests check that the padding changes no vector.
    """

    def __init__(self, max_length: int, capture: bool = True, capture_on_use: int = CAPTURE_ON_USE):
        self.max_length = max_length
        self.capture = capture
        self.capture_on_use = capture_on_use
        self._uses: dict[tuple, int] = {}
        self.stats = {"captured": 0, "replayed": 0, "eager": 0, "capture_seconds": 0.0}
        self._shapes: dict[tuple, _Shape] = {}
        self._eager: set[tuple[str, ...]] = set()  # views whose capture failed: they run eagerly
        self._off: str | None = None  # why no more graphs are captured (GPU memory ran out), else None
        self._pool: Any = None
        self._held = 0  # bytes of static outputs held
        self._said: set[str] = set()

    def widths(self, lengths: np.ndarray) -> np.ndarray:
        """The bucketed widths of texts of ``lengths`` tokens (what the batches are cut by)."""
        return np.fromiter((bucket_width(w, self.max_length) for w in lengths), dtype=np.int64, count=len(lengths))

    def shape(self, width: int, texts: int, batch_size: int | None, batch_tokens: int | None) -> tuple[int, int]:
        """(rows, width) a batch of ``texts`` whose longest has bucketed ``width`` is padded to."""
        return bucket_rows(texts, width, batch_size, batch_tokens), width

    def encode_views(self, texts: list[str], views: list, enc: dict[str, Any], *, as_tensors: bool = True) -> list[Any]:
        """The pooled vectors of the batch's ``len(texts)`` texts under each view, from ``enc`` padded to a bucket's shape."""
        import torch

        n = len(texts)
        with torch.inference_mode():
            key = tuple(v.cache_key() for v in views)
            shape = tuple(enc["input_ids"].shape)
            entry = self._shapes.get((key, shape))
            if entry is None and self._off is None and key not in self._eager:
                uses = self._uses[(key, shape)] = self._uses.get((key, shape), 0) + 1
                if uses >= self.capture_on_use:
                    entry = self._make(views, enc, key, shape)
            if entry is None:
                self.stats["eager"] += 1
                out = views[0].encode_views(texts, views, {k: v[:n] for k, v in enc.items()}, as_tensors=True)
            else:
                for name, static in entry.inputs.items():
                    static.copy_(enc[name])
                out = [o[:n].clone() for o in entry.run()]  # before the next replay overwrites them
                self.stats["replayed"] += entry.graph is not None
        return out if as_tensors else [o.cpu().numpy() for o in out]

    def _make(self, views: list, enc: dict[str, Any], key: tuple[str, ...], shape: tuple) -> _Shape | None:
        """The shape's graph, captured now (None where it cannot be: the batch then runs eagerly)."""
        import torch

        need = shape[0] * len(views) * int(getattr(views[0].config, "hidden_size", 0) or 0) * 4
        if self.capture and (len(self._shapes) >= MAX_GRAPHS or self._held + need > HELD_BYTES):
            self._say("held", f"{len(self._shapes)} CUDA graphs hold {self._held / 2**20:.0f} MiB of outputs: batches of "
                              "new shapes run without a graph")
            return None
        inputs = {k: v.clone() for k, v in enc.items()}  # outside the graphs' pool: the graphs read them
        views = list(views)  # kept with the graph that pools them

        def forward() -> list[Any]:  # no texts: the inputs are tokenised already
            out = views[0].encode_views([], views, inputs, as_tensors=True)
            # a view of a larger buffer (cls_before_pooler's first tokens, in fp32) would hold all of it: copied
            return [o if o.untyped_storage().nbytes() == o.numel() * o.element_size() else o.clone() for o in out]

        if not self.capture:
            entry = _Shape(inputs, [], None, forward)
            self._shapes[(key, shape)] = entry
            return entry
        start = time.perf_counter()
        try:
            side = torch.cuda.Stream()  # PyTorch's recipe: warm up on a side stream, then capture
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                forward()
            torch.cuda.current_stream().wait_stream(side)
            if self._pool is None:
                self._pool = torch.cuda.graph_pool_handle()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self._pool):
                outputs = forward()
        except torch.cuda.OutOfMemoryError:
            self._off = "out of GPU memory"
            torch.cuda.empty_cache()
            self._say("oom", "out of GPU memory while capturing a CUDA graph: encoding goes on without graphs")
            return None
        except Exception as e:  # an operation that cannot be captured: this model and views run eagerly
            self._eager.add(key)
            self._say(f"fail {e}", f"CUDA graph capture failed ({type(e).__name__}: {e}): those views run without graphs")
            return None
        entry = _Shape(inputs, list(outputs), graph, forward)
        self._shapes[(key, shape)] = entry
        self._held += sum(o.untyped_storage().nbytes() for o in entry.outputs)
        self.stats["captured"] += 1
        self.stats["capture_seconds"] += time.perf_counter() - start
        return entry

    def _say(self, what: str, message: str) -> None:
        if what not in self._said:
            self._said.add(what)
            log.warning(message)
