"""Bidirectional attention in the last K decoder layers of a causal LM (BeLLM, Li & Li 2024, §3.2).

BeLLM's paper removes the causal mask ``M`` of Eq. 2-3 in the last layer (Eq. 4) and writes the model
as a SUM (Eq. 5): ``h = LLM^{1:n}(x) + BiLLM^{n-1:n}(x)``, a causal stack plus a bidirectional copy of
the last layer, both applied to ``x``, the embedding output (Eq. 1). Read as one stack instead (the
causal mask simply removed in the last layer), the change does nothing to a last-token vector: the
last token already sees every token in a causal layer, so ``K = 1`` gives the causal model's vector
exactly and trains the paper's "no bi-layer" ablation (Table 4: 85.24 against 86.26).

Four readings, one ``mode`` each (``--bidirectional-mode``):

* ``sum`` (the default, the paper's Eq. 5 as written): the whole causal stack (layers 1..n) plus the
  last K layers run again, without the causal mask, on the embedding output; padding stays masked in
  that branch; the sum goes through the model's final norm (:mod:`.bidirectional_branch`).
* ``sum-code``: what the authors' December 2023 code in the AnglE repository computes (SeanLee97/AnglE
  ``angle_emb/bellm/modeling_llama.py``, class ``BeLlamaModel``): the causal branch stops BEFORE the last
  K layers (layers 1..n-K), and the last K layers run on the embedding output with an all-zero additive
  mask, so neither the causal mask nor the padding mask applies; the two are summed, then normed (only
  the branch when K = n). The paper's causal term runs through layer n; this one does not.
* ``mask``: one stack, the causal mask removed in the last K layers, padding masked (what embench did
  before; a no-op for a last-token vector when K = 1).
* ``billm``: one stack, every mask removed in the last K layers, padding attended too: the ``billm``
  package (WhereIsAI/BiLLM ``src/billm/modeling_llama.py``: layers with index >= ``BiLLM_START_INDEX``
  get an all-zero mask), which the authors' README (4AI/BeLLM) trains and evaluates with
  ``BiLLM_START_INDEX=31`` on the 32-layer LLaMA. It differs from ``mask`` only where a batch is padded.

Masks are read from what each layer is given, not from state kept between calls, so the stack modes
are right under gradient checkpointing and with several forward passes before one backward; the sum
modes keep one forward pass's inputs only from its first layer to its final norm (see the branch module).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch

from ..core.errors import EmbenchError
from .bidirectional_masks import SUPPORTED_ATTENTION, attention_kind, opened
from .layer_stack import layer_stack

HOOK_ATTR = "_embench_bidirectional"
MODES = {
    "sum": "the paper's Eq. 5: the causal stack plus the last K layers run without the causal mask on the embeddings "
           "(padding masked), summed before the final norm",
    "sum-code": "the authors' AnglE code (BeLlamaModel): causal layers 1..n-K plus the last K layers run on the "
                "embeddings with no mask at all (padding attended), summed before the final norm",
    "mask": "one stack: the causal mask removed in the last K layers, padding masked (a no-op for last-token "
            "pooling when K = 1)",
    "billm": "one stack: every mask removed in the last K layers, padding attended (the billm package, "
             "BiLLM_START_INDEX = n - K; the authors' README)",
}
DEFAULT_MODE = "sum"
STACK_MODES = ("mask", "billm")


def check_mode(mode: str | None, option: str = "--bidirectional-mode") -> str:
    """A mode's canonical name (case-insensitive); an unknown one is an error naming the four."""
    name = (mode or DEFAULT_MODE).strip().lower()
    if name not in MODES:
        raise EmbenchError(f"{option} {mode!r}: choose one of {', '.join(MODES)} "
                           f"({'; '.join(f'{k}: {v}' for k, v in MODES.items())})")
    return name


def _stack_hook(config: Any, padding: bool):
    def pre_hook(module: torch.nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        hidden = args[0] if args else kwargs["hidden_states"]
        return opened(module, args, kwargs, hidden, config, padding)

    return pre_hook


@dataclass(frozen=True)
class Bidirectional:
    """A model's bidirectional setting: the last ``last`` layers, read as ``mode``."""

    last: int = 0
    mode: str = DEFAULT_MODE

    def extra(self) -> dict[str, Any]:
        """What goes into an encoder's settings (cache key, record identity, provenance); nothing when causal."""
        return {"bidirectional_last": self.last, "bidirectional_mode": self.mode} if self.last else {}


def check_bidirectional(last: int | None, config: Any, family_causal: bool, model_name: str) -> int:
    """``--bidirectional-last`` checked against a model's config before its weights are read."""
    if last is not None and last < 0:
        raise EmbenchError(f"--bidirectional-last must be 0 or more, got {last}")
    if not last:
        return 0
    from .families import num_layers

    if not family_causal:
        raise EmbenchError(f"--bidirectional-last {last}: {model_name} is not a decoder LLM (its attention is already "
                           "bidirectional); the option is for causal LMs (Llama, Mistral, Qwen, GGUF files, ...)")
    layers = num_layers(config)
    if last > layers:
        raise EmbenchError(f"--bidirectional-last {last} is more than the {layers} layers of {model_name}")
    attention = getattr(config, "_attn_implementation", None)
    if attention not in (None, *SUPPORTED_ATTENTION):
        raise EmbenchError(f"--bidirectional-last: {model_name} uses {attention} attention; bidirectional layers are "
                           f"built for {' and '.join(SUPPORTED_ATTENTION)} (load it with one of them)")
    return last


def settle_bidirectional(last: int | None, mode: str | None, saved: list[tuple[Any, Any]], config: Any,
                         family_causal: bool, model_name: str) -> Bidirectional:
    """The setting a model loads with: what was given, else what a trained checkpoint or adapter saved
    (``saved``: its (last, mode) pairs, first found wins). A checkpoint saved with a K but no mode was
    trained before the modes existed, in ``mask`` mode, and loads in it."""
    kept = next(((k, m) for k, m in saved if k is not None), (None, None))
    if last is None:
        last = kept[0]
    if mode is None and kept[0] is not None:
        mode = kept[1] or "mask"
    given_mode = mode
    mode = check_mode(mode)
    last = check_bidirectional(last, config, family_causal, model_name)
    if given_mode is not None and not last and kept[0] is None:
        raise EmbenchError(f"--bidirectional-mode {mode} needs --bidirectional-last K (the last K layers, K > 0)")
    return Bidirectional(last, mode)


def with_bidirectional(src: Any, setting: Bidirectional) -> Any:
    """A loader source (a dataclass with ``load``) whose model is made bidirectional as it loads."""
    inner = src.load

    def load() -> tuple[torch.nn.Module, Any]:
        model, tok = inner()
        return make_bidirectional(model, setting.last, setting.mode), tok

    return dataclasses.replace(src, load=load)


def make_bidirectional(model: torch.nn.Module, last: int, mode: str = DEFAULT_MODE) -> torch.nn.Module:
    """Make the last ``last`` decoder layers of ``model`` attend in both directions, read as ``mode``.

    ``last = 0`` leaves the model as it is; ``last = number of layers`` makes every layer bidirectional
    (``sum``: the whole causal model plus a whole bidirectional copy). Applying it again replaces the
    earlier setting."""
    mode = check_mode(mode)
    base, layers = layer_stack(model)
    if not 0 <= last <= len(layers):
        raise EmbenchError(f"--bidirectional-last {last}: the model has {len(layers)} layers")
    attention_kind(model.config, torch.zeros(0))
    for handle in getattr(base, HOOK_ATTR, (None, []))[1]:
        handle.remove()
    if hasattr(base, HOOK_ATTR):
        delattr(base, HOOK_ATTR)
    if not last:
        return model
    if mode in STACK_MODES:
        hook = _stack_hook(model.config, padding=mode == "mask")
        handles = [layer.register_forward_pre_hook(hook, with_kwargs=True) for layer in list(layers)[len(layers) - last:]]
    else:
        from .bidirectional_branch import ParallelBranch

        handles = ParallelBranch(model, last, code=mode == "sum-code").install()
    setattr(base, HOOK_ATTR, (Bidirectional(last, mode), handles))
    return model


def bidirectional_setting(model: torch.nn.Module) -> Bidirectional:
    """The setting ``model`` runs with (``last`` 0: causal)."""
    return getattr(layer_stack(model)[0], HOOK_ATTR, (Bidirectional(),))[0]


def bidirectional_layers(model: torch.nn.Module) -> list[int]:
    """Indices (from 0) of the decoder layers made bidirectional (in the sum modes: those run again, unmasked)."""
    n, last = len(layer_stack(model)[1]), bidirectional_setting(model).last
    return list(range(n - last, n)) if last else []
