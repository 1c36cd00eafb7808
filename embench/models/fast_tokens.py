"""Token ids of many texts straight from a fast tokenizer's Rust backend, without padding.

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

from typing import Any


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
