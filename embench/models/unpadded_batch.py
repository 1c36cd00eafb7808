"""A padded batch run as one row of its real tokens (``--unpadded``), and its states put back in the padded layout.

Length-sorted token-budget batches still pad every text to the batch's longest, and a decoder's left padding
keeps SDPA off its flash kernel (a mask is given). Here the batch the engine padded is packed on the device: the
real tokens of every text, one after another, with each text's own positions (0, 1, ... from its first real
token) and the texts' boundaries for :mod:`.varlen_attention`. Nothing is read back to the host: the number of
real tokens comes from the host's lengths (the engine's, ``lengths``), and the packing index is
``torch.nonzero_static`` of the padding mask at that size. The model's states are scattered back into the padded
``(texts, width, hidden)`` layout, zero at the padding, so that every pooler, view and layer works unchanged.

Only where the result is the padded forward's up to rounding: SDPA models of families whose attention goes through
transformers' attention functions with the keywords passed down to them, whose positions are absolute from each
text's first token (BERT, RoBERTa) or rotary (Llama, Qwen2, Qwen3, Mistral: relative, so a left-padded text's
offset changes nothing), with no sliding-window layers, no patch of embench's own but BeLLM's ``sum`` and ``mask``
modes, and in training no attention dropout (``cls`` reads each text's first real token, which a packed row keeps).
``tests/test_unpadded.py`` checks each family against transformers' padded forward, and a training step's loss and
gradients against the padded step's.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import torch

from .varlen_attention import NAME, row_marker, use_varlen, why_not_flash

FAMILIES_UNPADDED = ("bert", "roberta", "xlm-roberta", "camembert", "llama", "qwen2", "qwen3", "mistral")
FROM_PADDING_INDEX = ("roberta", "xlm-roberta", "camembert")  # positions start after the padding index
PADDING_ATTENDED = ("sum-code", "billm")  # BeLLM modes whose bidirectional layers attend padding (bidirectional.py)


def why_not_unpadded(config: Any, device: str, dtype: torch.dtype, patched: str | None = None,
                     training: bool = False) -> str | None:
    """Why a model cannot run unpadded on ``device`` in ``dtype`` (None: it can). ``patched``: what embench changed in
    its attention that a packed row would not reproduce; ``training``: its attention dropout must be off (the flash
    kernel has none)."""
    kind = getattr(config, "model_type", "?")
    if kind not in FAMILIES_UNPADDED:
        return f"{kind} models are not run unpadded (supported: {', '.join(FAMILIES_UNPADDED)})"
    if getattr(config, "_attn_implementation", None) not in ("sdpa", None, NAME):
        return f"the model attends through {config._attn_implementation} (SDPA models only)"
    if getattr(config, "sliding_window", None) and getattr(config, "use_sliding_window", True):
        return "the model has sliding-window attention"
    if patched:
        return patched
    dropout = getattr(config, "attention_dropout", None) or getattr(config, "attention_probs_dropout_prob", None)
    if training and dropout:
        return f"the model drops attention weights in training (p = {dropout}); the flash kernel has no dropout"
    return why_not_flash(device, dtype)


def patched_attention(extra: dict[str, Any]) -> str | None:
    """What embench changed in a model's attention that a packed row would not reproduce (an encoder's settings'
    ``extra``), or None. BeLLM's ``sum`` and ``mask`` modes open each text's causal mask, which a packed row does
    too; ``sum-code`` and ``billm`` attend the padding itself."""
    if "family" in extra:
        return f"the {extra['family']} family changes the model (a patch, or a padding side or attention not its own)"
    if extra.get("bidirectional_last") and extra.get("bidirectional_mode") in PADDING_ATTENDED:
        return f"--bidirectional-mode {extra['bidirectional_mode']} attends padding, and a packed row has none"
    return None


@dataclass(frozen=True)
class Packed:
    """One batch as one row: the model's keyword arguments, and where each token sits in the padded layout."""

    inputs: dict[str, Any]
    index: torch.Tensor  # (tokens,) flat positions in the padded (texts x width) layout
    shape: tuple[int, int]  # (texts, width) of the padded batch

    def unpack(self, states: torch.Tensor) -> torch.Tensor:
        """``(1, tokens, hidden)`` states in the padded layout ``(texts, width, hidden)``, zero at the padding."""
        texts, width = self.shape
        full = states.new_zeros(texts * width, states.shape[-1])
        full.index_copy_(0, self.index, states[0])
        return full.view(texts, width, -1)


def pack(enc: dict[str, torch.Tensor], tokens: int, config: Any, left_padded: bool) -> Packed:
    """``enc`` (the padded batch on its device: ``input_ids``, ``attention_mask``, maybe ``token_type_ids``) as one
    row of its ``tokens`` real tokens (the host's count: sizing the row never waits for the device)."""
    mask = enc["attention_mask"]
    texts, width = mask.shape
    index = torch.nonzero_static(mask.reshape(-1), size=tokens).squeeze(1)
    lengths = mask.sum(1)
    columns = torch.arange(width, device=mask.device).expand(texts, width)
    positions = columns - (width - lengths)[:, None] if left_padded else columns  # 0 at each text's first token
    if getattr(config, "model_type", "") in FROM_PADDING_INDEX:
        positions = positions + config.pad_token_id + 1
    cumulative = torch.zeros(texts + 1, dtype=torch.int32, device=mask.device)
    cumulative[1:] = lengths.cumsum(0)
    inputs = {name: enc[name].reshape(-1)[index][None] for name in ("input_ids", "token_type_ids") if name in enc}
    inputs.update(position_ids=positions.reshape(-1)[index][None], attention_mask=row_marker(mask.device),
                  cu_seq_lens_q=cumulative, cu_seq_lens_k=cumulative, max_length_q=width, max_length_k=width)
    return Packed(inputs, index, (texts, width))


def forward_packed(model: torch.nn.Module, enc: dict[str, torch.Tensor], left_padded: bool, all_layers: bool,
                   num_layers: int, **kwargs: Any) -> tuple:
    """The hidden states of the padded batch ``enc`` (with the host's ``lengths``), computed as one packed row and put
    back in the padded layout: every layer's, or ``(None, ..., None, last)`` as the poolers index them. ``model``
    attends through ``varlen_attention.NAME`` (``use_varlen``)."""
    if model.config._attn_implementation != NAME:  # under SDPA the row's texts would attend to one another
        use_varlen(model)
    packed = pack(enc, int(enc["lengths"].numpy().sum()), model.config, left_padded)  # a host count: no device read
    out = model(**packed.inputs, output_hidden_states=all_layers, return_dict=True, **kwargs)
    if all_layers:
        return tuple(packed.unpack(h) for h in out.hidden_states)
    return (None,) * num_layers + (packed.unpack(out.last_hidden_state),)


def unpadded_where_possible(config: Any, device: str, dtype: torch.dtype, patched: str | None,
                            training: bool = False) -> bool:
    """Whether a model asked to run unpadded does (``patched``: :func:`patched_attention`'s answer, or the caller's);
    where it cannot, one warning saying why, and its batches stay padded (the same vectors up to rounding either
    way)."""
    reason = why_not_unpadded(config, device, dtype, patched, training)
    if reason is not None:
        option = "--set unpadded=1" if training else "--unpadded (unpadded=True)"
        warnings.warn(f"{option} has no effect here: {reason}; batches stay padded", stacklevel=3)
    return reason is None
