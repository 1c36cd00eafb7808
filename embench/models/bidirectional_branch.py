"""BeLLM's Eq. 5 as a parallel branch: the last K layers run a second time, without the causal mask, on
the embedding output, and their output is added to the causal stack's before the final norm.

``h = norm(C + B)``, with ``B`` the last K layers applied to ``x`` (the input of layer 1, Eq. 1) under a
mask with no causal part, and ``C``:

* ``sum`` (the paper's Eq. 5): the whole causal stack's output, layers 1..n (``LLM^{1:n}(x)``); the
  branch masks padding, so a text's vector does not depend on the batch it is padded in;
* ``sum-code`` (SeanLee97/AnglE ``angle_emb/bellm/modeling_llama.py``, ``BeLlamaModel.forward``): the
  causal stack's state before layer n-K+1, i.e. layers 1..n-K, and the branch attends every key, padding
  included, as that code's all-zero mask does; ``C`` is absent when K = n. The causal pass still runs
  the last K layers here (their output is discarded): K extra layer passes forward, no gradient.

Done with three hooks, so that the model, its state dict, peft and gradient checkpointing are untouched:
a pre-hook on layer 1 keeps its input ``x`` and the keyword arguments every layer gets (rotary
position embeddings, the mask); in ``sum-code`` a pre-hook on layer n-K+1 keeps ``C``; a pre-hook on
the final norm runs the branch and replaces the norm's input by the sum. The branch runs outside any
checkpointed layer call, from tensors handed to it explicitly, so a layer recomputed in backward never
reads state of another pass; what is kept lives from a pass's first layer to its norm only (the norm
hook takes it, and a forward hook on the stack's module drops what a pass left). A norm called outside
a forward pass (a layer view's final norm) finds nothing kept and passes through.

What a forward pass returns besides ``last_hidden_state``: ``hidden_states`` are the causal stack's, and
the last one is the normed sum; ``attentions`` are the causal layers' (the branch's calls are kept out of
transformers' output capture).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from ..core.errors import EmbenchError
from .bidirectional_masks import opened, positional_names
from .layer_stack import final_norm, layer_stack

_CACHE_KEYWORDS = ("cache", "past_key_value", "past_key_values")  # the branch neither reads nor writes a cache


def _uncached(name: str, value: Any) -> Any:
    """A layer argument as the branch passes it: no cache, and none asked for."""
    return None if name in _CACHE_KEYWORDS else False if name == "use_cache" else value


@contextlib.contextmanager
def _unrecorded() -> Iterator[None]:
    """transformers >= 5 gathers ``hidden_states``/``attentions`` with forward hooks on the layers while a
    collector is active: the branch's layer calls must not add entries. Older versions collect in the
    model's own loop, which never sees the branch."""
    try:
        from transformers.utils.output_capturing import _active_collector
    except ImportError:
        yield
        return
    token = _active_collector.set(None)
    try:
        yield
    finally:
        _active_collector.reset(token)


class ParallelBranch:
    """The hooks of one model's sum mode (see the module docstring)."""

    def __init__(self, model: torch.nn.Module, last: int, code: bool) -> None:
        self.base, layers = layer_stack(model)
        self.norm = final_norm(model)
        if self.norm is None:
            raise EmbenchError(f"--bidirectional-mode {'sum-code' if code else 'sum'} adds a bidirectional branch before "
                               f"the final norm; {type(model).__name__} has none (use --bidirectional-mode mask or billm)")
        self.layers, self.start, self.code, self.config = list(layers), len(layers) - last, code, model.config
        self.inputs: tuple[torch.Tensor, tuple, dict] | None = None  # x, the other positional and keyword arguments
        self.causal: torch.Tensor | None = None  # sum-code: the input of layer start + 1
        self.inside = False

    def install(self) -> list[Any]:
        handles = [self.layers[0].register_forward_pre_hook(self._keep_inputs, with_kwargs=True)]
        if self.code and self.start > 0:
            handles.append(self.layers[self.start].register_forward_pre_hook(self._keep_causal, with_kwargs=True))
        handles.append(self.norm.register_forward_pre_hook(self._add_branch))
        handles.append(self.base.register_forward_hook(self._drop))
        return handles

    @staticmethod
    def _hidden(args: tuple, kwargs: dict) -> torch.Tensor:
        return args[0] if args else kwargs["hidden_states"]

    def _keep_inputs(self, module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        if not self.inside:
            self.inputs = (self._hidden(args, kwargs), tuple(args[1:]), dict(kwargs))

    def _keep_causal(self, module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        if not self.inside:
            self.causal = self._hidden(args, kwargs)

    def _drop(self, module: torch.nn.Module, args: tuple, output: Any) -> None:
        self.inputs = self.causal = None

    def _add_branch(self, module: torch.nn.Module, args: tuple) -> tuple | None:
        if self.inputs is None or self.inside:
            return None
        (x, rest, kwargs), causal = self.inputs, (args[0] if not self.code else self.causal)
        self.inputs = self.causal = None
        if self.code and self.start > 0 and causal is None:
            raise EmbenchError(f"--bidirectional-mode sum-code: layer {self.start + 1} was not run in this pass")
        # the arguments of layer 1's call (every layer of the stack takes the same), positional ones included (GPT-2's
        # blocks get their cache and mask by position)
        given, kwargs = opened(self.layers[0], (x, *rest), {k: v for k, v in kwargs.items() if k != "hidden_states"}, x,
                               self.config, padding=not self.code)
        names = positional_names(type(self.layers[0]))
        rest = tuple(_uncached(names[i] if i < len(names) else "", v) for i, v in enumerate(given[1:]))
        kwargs = {k: _uncached(k, v) for k, v in kwargs.items()}
        h = x
        self.inside = True
        try:
            with _unrecorded():
                for layer in self.layers[self.start:]:
                    out = layer(h, *rest, **kwargs)
                    h = out[0] if isinstance(out, tuple) else out
        finally:
            self.inside = False
        return (h if causal is None else causal + h, *args[1:])
