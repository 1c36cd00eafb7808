"""Per-token passes shared by the analyses that read inside the model (attention, cls-energy,
token-dependency): one forward pass per batch over the union of the texts every analysis asks for.

An analysis that reads attention weights, value projections or per-token hidden states is written as
a generator: it ``yield``\\s the :class:`TokenRequest`\\s it needs (one per model: the texts and a
``consume`` callback receiving each batch), then writes its tables and figures once the pass is over.
:func:`drive` runs one such analysis; :func:`run_together` starts several, groups their requests by
model, runs ONE pass per model over the union of their texts (with attention weights and value
projections where any of them needs them) and lets each finish.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..core.errors import EmbenchError

VALUE_NAMES = ("value", "v_proj", "v", "v_lin", "value_proj")


@dataclass
class TokenBatch:
    """One batch of a per-token pass: the tokenised texts and what the model gave for them."""

    encoder: Any
    texts: list[str]
    enc: dict[str, torch.Tensor]
    hidden_states: tuple[torch.Tensor, ...]  # (embedding output, layer 1, ..., layer L)
    attentions: tuple[torch.Tensor, ...] | None  # per layer (B, H, T, T), when asked for
    values: list[torch.Tensor] | None  # per layer the value projection's output (B, T, kv_heads * d)

    @functools.cached_property
    def lengths(self) -> np.ndarray:
        return self.enc["attention_mask"].sum(1).cpu().numpy().astype(int)

    @functools.cached_property
    def contexts(self) -> list[torch.Tensor]:
        """Per layer the context tensor softmax(QK^T / sqrt d) V, (B, H, T, d) (JTCSE Eq. 6's rows)."""
        if self.attentions is None or self.values is None:
            raise EmbenchError("context tensors need a pass with attention weights and value projections")
        out = []
        for att, v in zip(self.attentions, self.values, strict=True):
            b, h, t, _ = att.shape
            d = head_dim(self.encoder.model.config, h)
            v = v.float().view(b, t, -1, d).permute(0, 2, 1, 3)  # (B, key/value heads, T, d)
            if v.shape[1] != h:  # grouped-query attention: each key/value head serves h / kv_heads query heads
                v = v.repeat_interleave(h // v.shape[1], dim=1)
            out.append(torch.matmul(att.float(), v))
        return out


@dataclass
class TokenRequest:
    """What one analysis needs from one model: per-token states of ``texts``, handed to ``consume``
    batch by batch with the rows of the batch that are its texts."""

    encoder: Any
    texts: list[str]
    consume: Callable[[TokenBatch, list[int]], None]
    attentions: bool = False
    values: bool = False
    batch_size: int = 32


Analysis = Generator[list[TokenRequest], None, Any]


def drive(gen: Analysis) -> Any:
    """Run one generator analysis: serve its requests, then return what it returns."""
    return run_together([gen])[0]


def run_together(gens: list[Analysis]) -> list[Any]:
    """Start every analysis, run one pass per model over the union of their texts, let each finish."""
    requests = [next(g) for g in gens]
    by_encoder: dict[int, list[TokenRequest]] = {}
    for reqs in requests:
        for r in reqs:
            by_encoder.setdefault(id(r.encoder), []).append(r)
    for reqs in by_encoder.values():
        token_pass(reqs, min(r.batch_size for r in reqs))
    results = []
    for g in gens:
        try:
            g.send(None)
        except StopIteration as stop:
            results.append(stop.value)
        else:
            raise RuntimeError("an analysis asked for a second per-token pass")
    return results


def token_pass(requests: list[TokenRequest], batch_size: int) -> int:
    """ONE forward pass per batch over the union of the requests' texts (one model); returns the batches run."""
    encoder = requests[0].encoder
    texts = list(dict.fromkeys(t for r in requests for t in r.texts))
    wanted = [set(r.texts) for r in requests]
    attentions = any(r.attentions or r.values for r in requests)
    values: list[torch.Tensor] = []
    hooks = []
    if attentions:
        ensure_eager(encoder)
    if any(r.values for r in requests):
        hooks = [m.register_forward_hook(lambda _m, _i, o: values.append(o.detach()))
                 for m in value_modules(encoder.model, encoder.num_layers)]
    batches = 0
    try:
        for b in range(0, len(texts), batch_size):
            batch = texts[b : b + batch_size]
            values.clear()
            enc = encoder.tokenize(batch)
            with torch.inference_mode():
                out = encoder.forward_hidden(enc, True, output_attentions=attentions)
            att = tuple(out.attentions) if attentions else None
            if attentions and (not att or any(a is None for a in att)):
                impl = getattr(encoder.model.config, "_attn_implementation", "unknown")
                raise EmbenchError(f"{encoder.name}: the model returned no attention weights (attention implementation "
                                   f"{impl!r}); attention analyses need attn_implementation='eager'")
            tb = TokenBatch(encoder, batch, enc, tuple(out.hidden_states), att, list(values) if hooks else None)
            batches += 1
            for r, want in zip(requests, wanted, strict=True):
                rows = [i for i, t in enumerate(batch) if t in want]
                if rows:
                    r.consume(tb, rows)
    finally:
        for h in hooks:
            h.remove()
    return batches


def ensure_eager(encoder) -> None:
    """Make ``encoder.model`` return attention weights, or raise a clear EmbenchError."""
    model = encoder.model
    impl = getattr(model.config, "_attn_implementation", None)
    if impl in (None, "eager"):
        return
    try:
        model.set_attn_implementation("eager")
    except Exception as e:  # a model class without an eager path, or an old transformers
        raise EmbenchError(
            f"{encoder.name}: attention analyses need attention weights, which the {impl!r} attention "
            f"implementation does not return, and switching to 'eager' failed ({type(e).__name__}: {e}). "
            f"Load the model with attn_implementation='eager'."
        ) from None


def value_modules(model, num_layers: int) -> list[torch.nn.Module]:
    """The value projection of every self-attention layer, in layer order."""
    found = [m for name, m in model.named_modules() if isinstance(m, torch.nn.Linear) and name.rsplit(".", 1)[-1] in VALUE_NAMES]
    if len(found) != num_layers:
        raise EmbenchError(
            f"cls-energy reads each layer's value projection (a Linear named one of {VALUE_NAMES}); "
            f"found {len(found)} for {num_layers} layers in {type(model).__name__}"
        )
    return found


def head_dim(config, heads: int) -> int:
    d = getattr(config, "head_dim", None)
    if isinstance(d, int) and d > 0:
        return d
    hidden = getattr(config, "hidden_size", None) or getattr(getattr(config, "text_config", None), "hidden_size", None)
    if not hidden:
        raise EmbenchError(f"cannot tell the attention head size of a {type(config).__name__} model")
    return int(hidden) // int(getattr(config, "num_attention_heads", heads))
