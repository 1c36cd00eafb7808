"""Per-token passes shared by the analyses that read inside the model (attention, cls-energy,
token-dependency): one forward pass per batch over the union of the texts every analysis asks for.

An analysis that reads attention weights, value projections or per-token hidden states is written as
a generator: it ``yield``\\s the :class:`TokenRequest`\\s it needs (one per model: the texts and a
``consume`` callback receiving each batch), then writes its tables and figures once the pass is over.
:func:`drive` runs one such analysis; :func:`run_together` starts several, groups their requests by
model, runs ONE pass per model over the union of their texts (with attention weights and value
projections where any of them needs them) and lets each finish.

A decoder in a BeLLM sum mode (``--bidirectional-mode sum`` or ``sum-code``,
:mod:`embench.models.bidirectional_branch`) runs its last K layers a second time, as a bidirectional branch that
transformers' ``attentions`` leave out: the pass records that branch's attention weights and value projections
too (:attr:`TokenBatch.branch_layers`), so the analyses report the branch's layers as rows of their own, labelled
with :data:`BRANCH`, beside the main stack's, which are what they were without the branch.
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
MAIN, BRANCH = "main", "bidirectional branch"  # the ``stack`` a layer's row belongs to


def series(label: str, stack: str) -> str:
    """The name a stack's rows and lines go by: the model's label, marked for the bidirectional branch."""
    return label if stack == MAIN else f"{label} ({stack})"


def stacks_of(targets) -> list[tuple[str, str]]:
    """(series name, stack) of the rows of every (label, encoder): its main stack, then a sum mode's branch."""
    return [(series(label, s), s) for label, encoder in targets
            for s in ((MAIN, BRANCH) if branch_layers(encoder.model) else (MAIN,))]


def branch_layers(model) -> list[int]:
    """Numbers (1 = the first layer) of the layers a sum mode runs again as its bidirectional branch, in their
    order; empty for every other model."""
    from ..models.bidirectional import STACK_MODES, bidirectional_setting
    from ..models.layer_stack import layer_stack

    try:
        n, setting = len(layer_stack(model)[1]), bidirectional_setting(model)
    except EmbenchError:  # no layer stack found: no branch either
        return []
    return list(range(n - setting.last + 1, n + 1)) if setting.last and setting.mode not in STACK_MODES else []


@dataclass
class TokenBatch:
    """One batch of a per-token pass: the tokenised texts and what the model gave for them."""

    encoder: Any
    texts: list[str]
    enc: dict[str, torch.Tensor]
    hidden_states: tuple[torch.Tensor, ...]  # (embedding output, layer 1, ..., layer L)
    attentions: tuple[torch.Tensor, ...] | None  # per layer (B, H, T, T), when asked for
    values: list[torch.Tensor] | None  # per layer the value projection's output (B, T, kv_heads * d)
    # a sum mode's bidirectional branch: its layers' numbers, and their attention weights and values from the
    # branch's own run (the two fields above hold the main stack's only)
    branch_layers: tuple[int, ...] = ()
    branch_attentions: tuple[torch.Tensor, ...] | None = None
    branch_values: list[torch.Tensor] | None = None

    @functools.cached_property
    def lengths(self) -> np.ndarray:
        return self.enc["attention_mask"].sum(1).cpu().numpy().astype(int)

    @functools.cached_property
    def contexts(self) -> list[torch.Tensor]:
        """Per layer the context tensor softmax(QK^T / sqrt d) V, (B, H, T, d) (JTCSE Eq. 6's rows)."""
        return self._contexts(self.attentions, self.values)

    @functools.cached_property
    def branch_contexts(self) -> list[torch.Tensor]:
        """:attr:`contexts` of the bidirectional branch's layers (none without a branch)."""
        return self._contexts(self.branch_attentions, self.branch_values) if self.branch_layers else []

    def stacks(self, what: str) -> list[tuple[str, int, torch.Tensor]]:
        """(stack, layer number, tensor) of every layer run: the main stack's, then the branch's; ``what`` is
        ``attentions`` or ``contexts``."""
        main = list(enumerate(getattr(self, what), start=1))
        branch = zip(self.branch_layers, getattr(self, "branch_" + what) or [], strict=True)
        return [(MAIN, n, t) for n, t in main] + [(BRANCH, n, t) for n, t in branch]

    def _contexts(self, attentions, values) -> list[torch.Tensor]:
        if attentions is None or values is None:
            raise EmbenchError("context tensors need a pass with attention weights and value projections")
        out = []
        for att, v in zip(attentions, values, strict=True):
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
    branch_att: list[torch.Tensor] = []
    hooks = []
    branch = branch_layers(encoder.model) if attentions else []
    if attentions:
        ensure_eager(encoder)
        hooks = [m.register_forward_hook(_weights_into(branch_att)) for m in _attention_modules(encoder.model, branch)]
    n_values = 0
    if any(r.values for r in requests):
        modules = value_modules(encoder.model, encoder.num_layers)
        n_values = len(modules)
        hooks += [m.register_forward_hook(lambda _m, _i, o: values.append(o.detach())) for m in modules]
    batches = 0
    try:
        for b in range(0, len(texts), batch_size):
            batch = texts[b : b + batch_size]
            values.clear()
            branch_att.clear()
            enc = encoder.tokenize(batch)
            with torch.inference_mode():
                out = encoder.forward_hidden(enc, True, output_attentions=attentions)
            att = tuple(out.attentions) if attentions else None
            if attentions and (not att or any(a is None for a in att)):
                impl = getattr(encoder.model.config, "_attn_implementation", "unknown")
                raise EmbenchError(f"{encoder.name}: the model returned no attention weights (attention implementation "
                                   f"{impl!r}); attention analyses need attn_implementation='eager'")
            got = {}
            if branch:
                # the branch layers run twice a pass, in the main stack and then (at the final norm) as the branch
                # (models/bidirectional_branch.py): the last call of each is the branch's; so are the last values
                if len(branch_att) != 2 * len(branch) or (n_values and len(values) != n_values + len(branch)):
                    raise EmbenchError(f"{encoder.name}: layers {branch} (the bidirectional branch) gave {len(branch_att)} "
                                       f"attention weights and {len(values)} value projections in one forward pass where "
                                       f"{2 * len(branch)} and {n_values + len(branch) if n_values else 0} (main stack, then "
                                       "branch) were expected: the branch cannot be told from the main stack "
                                       "(--bidirectional-mode mask has no branch)")
                got = {"branch_layers": tuple(branch), "branch_attentions": tuple(branch_att[len(branch):]),
                       "branch_values": list(values[n_values:]) if n_values else None}
            tb = TokenBatch(encoder, batch, enc, tuple(out.hidden_states), att, list(values[:n_values]) if n_values else None, **got)
            batches += 1
            for r, want in zip(requests, wanted, strict=True):
                rows = [i for i, t in enumerate(batch) if t in want]
                if rows:
                    r.consume(tb, rows)
    finally:
        for h in hooks:
            h.remove()
    return batches


def _attention_modules(model, layers: list[int]) -> list[torch.nn.Module]:
    """The modules of the numbered layers that may return attention weights (the layers' direct children: Llama's
    ``self_attn``, GPT-2's ``attn``; :func:`_weights_into` keeps only what returns weights)."""
    if not layers:
        return []
    from ..models.layer_stack import layer_stack

    stack = layer_stack(model)[1]
    return [child for n in layers for child in stack[n - 1].children()]


def _weights_into(kept: list[torch.Tensor]):
    """A forward hook that keeps an attention module's weights, (B, H, T, T) as the second output."""
    def hook(_m, _i, out):
        w = out[1] if isinstance(out, tuple) and len(out) > 1 else None
        if isinstance(w, torch.Tensor) and w.dim() == 4 and w.shape[-1] == w.shape[-2]:
            kept.append(w.detach())
    return hook


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
