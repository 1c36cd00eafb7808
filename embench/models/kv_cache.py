"""Encoding and training never build a decoder's key/value cache.

A decoder's config sets ``use_cache`` (Llama, Qwen2, Mistral...), so a plain forward builds a cache and, in
every layer, copies the layer's keys and values into it (``torch.cat`` onto an empty tensor): memory held until
the forward returns, and kernels whose output nothing reads, since a sentence is encoded in one call and never
continued. Under ``torch.compile`` of one layer at a time the cache, indexed by the layer's number, also made
every layer compile anew. Generation (``generate/decoding.py``) asks for its cache itself.
"""

from __future__ import annotations

from typing import Any

from .families import is_decoder


def no_kv_cache(config: Any) -> dict[str, bool]:
    """The forward keyword that turns the cache off for a decoder whose config turns it on; none otherwise (an
    encoder builds no cache, and the forward of a custom one may not take the keyword)."""
    return {"use_cache": False} if is_decoder(config) and getattr(config, "use_cache", False) else {}
