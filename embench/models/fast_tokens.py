"""Token ids of many texts straight from a fast tokenizer's Rust backend, without padding; and the padding
of a batch of them (:func:`pad_rows`).

``tokenizer(texts, truncation=True, max_length=n)`` runs the Rust ``encode_batch`` (on every core) and
then converts each text's encoding into Python lists in a loop over the texts: on 26,083 sts-all texts
that conversion took as long as the tokenisation itself (0.65 s against 0.54 s on 2 cores), with the GPU
waiting. Here the backend is set up as ``transformers`` sets it for that call (longest-first truncation
at ``max_length`` on the tokenizer's truncation side, no padding, special tokens added) and only the ids
(and the token type ids where the model takes them) are read; the attention mask of unpadded rows is
all ones, so :meth:`HFEncoder.collate` makes it from the lengths. A tokenizer without a Rust backend
(a slow, Python tokenizer) goes through ``transformers`` as before. Both give the same ids
(``tests/test_engine_gpu_path.py``).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import torch


def backend_of(tokenizer: Any) -> Any | None:
    """The ``tokenizers.Tokenizer`` behind a fast ``transformers`` tokenizer, else None."""
    backend = getattr(tokenizer, "_tokenizer", None) if getattr(tokenizer, "is_fast", False) else None
    return backend if backend is not None and hasattr(backend, "encode_batch") else None


def token_ids(tokenizer: Any, texts: list[str], max_length: int) -> dict[str, list[list[int]]]:
    """``input_ids`` (and ``token_type_ids`` where the tokenizer's model takes them) of each text, unpadded."""
    want_types = "token_type_ids" in getattr(tokenizer, "model_input_names", ())
    backend = backend_of(tokenizer)
    if backend is None:
        enc = tokenizer(texts, truncation=True, max_length=max_length, add_special_tokens=True)
        return {k: list(enc[k]) for k in ("input_ids", "token_type_ids") if k in enc and (k == "input_ids" or want_types)}
    truncation, padding = backend.truncation, backend.padding
    try:
        backend.enable_truncation(max_length, stride=0, strategy="longest_first",
                                  direction=getattr(tokenizer, "truncation_side", "right"))
        backend.no_padding()
        encodings = backend.encode_batch(texts, add_special_tokens=True)
    finally:  # leave the backend as transformers' next call expects to find it
        if truncation is None:
            backend.no_truncation()
        else:
            backend.enable_truncation(**truncation)
        if padding is not None:
            backend.enable_padding(**padding)
    out = {"input_ids": [e.ids for e in encodings]}
    if want_types:
        out["token_type_ids"] = [e.type_ids for e in encodings]
    return out


def pad_rows(features: dict[str, list[list[int]]], tokenizer: Any, device: str,
             shape: tuple[int, int] | None = None) -> dict[str, torch.Tensor]:
    """Pad unpadded rows to the longest, on the tokenizer's side, as ``tokenizer(..., padding=True)`` does, with
    the attention mask of the padding. The mask and the padded ids (and token types) are written into one
    host buffer, pinned on a GPU, which goes to the device in one copy that does not wait for the device: one
    pinned block and one copy a batch, not one of each per tensor (the profile of an H200 pass of sts-all put
    the host's remaining time in copies into pinned memory). ``shape`` (rows, width): pad to it instead (the
    CUDA graphs' fixed shapes, ``encoding/cuda_graphs.py``); each added row is one pad token under mask 1, so
    that no row is wholly masked. Without ``shape``, each row's length too, as a host tensor (``lengths``): what the
    device's mask holds, known without asking the device (a batch run unpadded: ``unpadded_batch.py`` sizes its packed
    row by it; a batch without padding gets no mask: ``attention_masks.py``)."""
    pads = {"input_ids": tokenizer.pad_token_id, "token_type_ids": getattr(tokenizer, "pad_token_type_id", 0)}
    if shape is not None and shape[0] > len(features["input_ids"]):
        extra = shape[0] - len(features["input_ids"])
        features = {name: list(seqs) + [[pads[name]]] * extra for name, seqs in features.items() if name in pads}
    rows = features["input_ids"]
    row_lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    width = int(row_lengths.max()) if shape is None else max(int(shape[1]), int(row_lengths.max()))
    cols = np.arange(width)
    # where each row's tokens go: from the left, or after the padding on the left
    real = cols >= (width - row_lengths)[:, None] if tokenizer.padding_side == "left" else cols < row_lengths[:, None]
    names = ["attention_mask", *(name for name in features if name in pads)]
    cuda = str(device).startswith("cuda")
    host = torch.empty((len(names), len(rows), width), dtype=torch.int64, pin_memory=cuda)
    arrays = host.numpy()
    arrays[0] = real
    for arr, name in zip(arrays[1:], names[1:], strict=True):
        arr.fill(pads[name])
        arr[real] = np.fromiter(itertools.chain.from_iterable(features[name]), dtype=np.int64, count=int(row_lengths.sum()))
    moved = host.to(device, non_blocking=True) if cuda else host.to(device)
    out = dict(zip(names, moved.unbind(0), strict=True))
    if shape is None:  # a fixed shape (a CUDA graph's) is replayed for other rows: no host fact holds for them
        out["lengths"] = torch.from_numpy(row_lengths)
    return out


def to_device(tensors: dict[str, torch.Tensor], device: str | torch.device) -> dict[str, torch.Tensor]:
    """Host tensors on ``device``: on CUDA through pinned memory in a copy that does not wait for the device (a
    copy from pageable memory waits for every kernel queued before it, so the host could not run ahead)."""
    if not str(device).startswith("cuda"):
        return {name: t.to(device) for name, t in tensors.items()}
    return {name: t.pin_memory().to(device, non_blocking=True) for name, t in tensors.items()}
