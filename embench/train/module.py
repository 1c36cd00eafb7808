"""The module most methods train: a transformers encoder, a pooler, an optional head, its tokenizer.

``encode(texts)`` is the one way texts become training vectors, so every method tokenizes (with
the prompt template and maximum length of the run) and pools the same way as ``embench run`` does
at test time (the poolers of :mod:`embench.models.pooling`).

One call over many texts of unlike length runs them in length buckets (``bucket_tokens``, the trainer's
``--set bucket_tokens``, cut where the padding costs least: ``length_groups.length_buckets``): each bucket is
padded to its own longest text, and the vectors come back in the texts' order within one autograd graph, so the loss
and its gradients are those of one padded pass (up to rounding: rows do not see each other; the modes that attend to
padding, ``--bidirectional-mode billm`` and ``sum-code``, excepted). The bellm recipe's step of 768 SNLI texts, about
15k real tokens of up to 60, is 46k tokens padded as one pass and about 16.5k in buckets; with gradient
checkpointing one layer of one bucket is recomputed at a time, so the bucket bounds that memory too
(``fit_memory.py``).
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import nn

from ..models.attention_masks import model_inputs
from ..models.bidirectional import bidirectional_setting
from ..models.encoder import DTYPES
from ..models.families import is_decoder
from ..models.fast_tokens import pad_rows, to_device
from ..models.kv_cache import no_kv_cache
from ..models.pooling import POOLERS, PoolInput, needs_all_layers, pooled_by
from ..models.prompt_fit import prompted_token_ids
from ..models.unpadded_batch import forward_packed, patched_attention, unpadded_where_possible
from ..report.progress import announce
from .length_groups import length_buckets
from .mixed_precision import eval_dtype


class SentenceModel(nn.Module):
    """``encoder`` + pooler (+ ``head`` applied to the pooled vector in training, e.g. SimCSE's MLP)."""

    def __init__(self, encoder: nn.Module, tokenizer: Any, *, pooling: str, max_length: int, prompt: str = "",
                 head: nn.Module | None = None, use_pooler_head: bool | None = None, mlm_head: nn.Module | None = None,
                 bucket_tokens: int = 0, bucket_min_tokens: int = 0):
        super().__init__()
        self.mlm_head = mlm_head
        self.bucket_tokens = int(bucket_tokens)  # > 0: one call over more padded tokens runs in length buckets
        self.bucket_min_tokens = int(bucket_min_tokens)  # what the smallest bucket costs in the cuts' sum (length_groups)
        self.tokens = 0  # real tokens seen in training passes (for tokens/s and MFU)
        self.padded_tokens = 0  # ... with their padding: what the device computed (a hardware MFU)
        self.unpadded = False  # each pass as one row of its real tokens (run_unpadded; models/unpadded_batch.py)
        self._ready: dict[tuple[str, ...], tuple[dict[str, torch.Tensor], int]] = {}  # pretokenize()'s, by texts
        self._plans: dict[tuple[str, ...], list[list[int]] | None] = {}  # ... and the buckets of each pass
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.pooling = POOLERS.canonical(pooling)
        self._pool = POOLERS.get(pooling)
        self.max_length = int(max_length)
        self.prompt = prompt
        self.head = head
        config = getattr(encoder, "config", None)
        self.num_layers = int(getattr(config, "num_hidden_layers", 0) or 0)
        pooler = getattr(encoder, "pooler", None)
        self.use_pooler_head = (self.pooling == "cls" and pooler is not None) if use_pooler_head is None else use_pooler_head
        if pooler is not None and not self.use_pooler_head:
            for p in pooler.parameters():  # unused: keep it out of the optimiser and of DDP
                p.requires_grad_(False)

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def tokenize(self, texts: list[str]) -> dict[str, torch.Tensor]:
        """``texts`` as the encoder's inputs on its device: those of :meth:`pretokenize` when it had them."""
        return self._inputs(texts, self._ready)

    def _inputs(self, texts: list[str], ready: dict) -> dict[str, torch.Tensor]:
        found = ready.get(tuple(texts))
        enc, real = found if found is not None else self._tokenized(texts)
        if torch.is_grad_enabled():  # counted when trained on, however often (GradCache's first pass has no grad)
            self.tokens += real
            self.padded_tokens += real if self.unpadded and "lengths" in enc else enc["attention_mask"].numel()
        return enc

    def run_unpadded(self, device: str, dtype: torch.dtype) -> bool:
        """Run every pass as one row of its real tokens (``--set unpadded=1``) where the model can: a GPU in bf16/fp16,
        a supported family with no attention dropout, BeLLM's sum or mask mode, no MLM head; elsewhere one warning
        saying why, and passes stay padded. From its first packed pass on, the encoder attends through
        ``varlen_attention.NAME`` (``unpadded_batch.forward_packed``)."""
        patched = "the MLM term's masked copy runs padded" if self.mlm_head is not None else None
        if is_decoder(self.encoder.config):
            setting = bidirectional_setting(self.encoder)
            patched = patched or patched_attention({"bidirectional_last": setting.last, "bidirectional_mode": setting.mode})
        self.unpadded = unpadded_where_possible(self.encoder.config, device, dtype, patched, training=True)
        return self.unpadded

    def pretokenize(self, passes: list[list[str]]) -> None:
        """Tokenize the texts of later passes now (each a list of texts; a pass cut into length buckets, bucket by
        bucket), forgetting any earlier ones. The trainer calls it with the next step's passes while the device
        still runs this step's backward, so the host's tokenizing overlaps the device's work instead of leaving
        the device idle between steps."""
        ready, plans = {}, {}
        for texts in passes:
            plan, parts = self._cut(texts)
            plans[tuple(texts)] = plan
            ready.update(parts or {tuple(texts): self._tokenized(texts)})
        self._ready, self._plans = ready, plans

    def buckets(self, texts: list[str]) -> list[list[int]] | None:
        """The length buckets one call over ``texts`` runs in (positions of its texts), or None: one pass."""
        return self._plan_and_inputs(texts)[0]

    def _plan_and_inputs(self, texts: list[str]) -> tuple[list[list[int]] | None, dict]:
        """The buckets of one call over ``texts`` and their inputs: those :meth:`pretokenize` made, else made now."""
        key = tuple(texts)
        return (self._plans[key], self._ready) if key in self._plans else self._cut(texts)

    def _cut(self, texts: list[str]) -> tuple[list[list[int]] | None, dict]:
        """The length buckets of one call over ``texts`` (None: one pass) and the inputs of each, by its texts, from
        one tokenization; nothing is tokenized where the call cannot pass the budget even at the maximum length."""
        if self.bucket_tokens <= 0 or len(texts) * self.max_length <= self.bucket_tokens:
            return None, {}
        ids = self._ids(texts)
        plan = length_buckets([len(x) for x in ids["input_ids"]], self.bucket_tokens, self.bucket_min_tokens)
        parts = [list(range(len(texts)))] if plan is None else plan
        return plan, {tuple(texts[i] for i in g): self._padded({k: [v[i] for i in g] for k, v in ids.items()})
                      for g in parts}

    def token_lengths(self, texts: list[str]) -> list[int]:
        """Tokens of each text as :meth:`tokenize` makes them (prompt, truncation), without padding."""
        return [len(x) for x in self._ids(texts)["input_ids"]]

    def _ids(self, texts: list[str]) -> dict[str, list[list[int]]]:
        """Unpadded ids (and token types) of ``texts`` with the run's prompt and maximum length: the engine's own
        tokenisation (``fast_tokens.token_ids``, ids read straight from the Rust tokenizer); a long text is cut before
        it goes into a template with words after it, which so keeps its end (``models/prompt_fit.py``, as AnglE)."""
        return prompted_token_ids(self.tokenizer, self.prompt, texts, self.max_length)

    def _padded(self, ids: dict[str, list[list[int]]]) -> tuple[dict[str, torch.Tensor], int]:
        """Padded inputs on the device (one pinned, asynchronous copy on a GPU: ``fast_tokens.pad_rows``) and the real
        tokens among them."""
        return pad_rows(ids, self.tokenizer, self.device), sum(map(len, ids["input_ids"]))

    def _tokenized(self, texts: list[str]) -> tuple[dict[str, torch.Tensor], int]:
        return self._padded(self._ids(texts))

    def embed(self, enc: dict[str, torch.Tensor]) -> torch.Tensor:
        """Pooled vectors of tokenized texts (through ``head`` when there is one)."""
        all_layers = needs_all_layers(self.pooling)
        if self.unpadded and "lengths" in enc:  # one row of real tokens, its states back in the padded layout (unpadded_batch.py)
            hidden = forward_packed(self.encoder, enc, self.tokenizer.padding_side == "left", all_layers, self.num_layers,
                                    **no_kv_cache(self.encoder.config))
        else:
            # on a GPU an SDPA encoder gets its 4D mask ready-made: transformers' check for padding would make the host
            # wait for the device before every forward (models/attention_masks.py)
            out = self.encoder(**model_inputs(self.encoder, enc, self.device), output_hidden_states=all_layers,
                               return_dict=True, **no_kv_cache(self.encoder.config))
            hidden = tuple(out.hidden_states) if all_layers else (None,) * self.num_layers + (out.last_hidden_state,)
        last = len(hidden) - 1
        pooler = self.encoder.pooler if self.use_pooler_head else None
        z = pooled_by(self._pool, PoolInput(hidden, enc["attention_mask"], last, pooler), self.pooling)
        return self.head(z) if self.head is not None else z

    def encode(self, texts: list[str]) -> torch.Tensor:
        return self.embed(self.tokenize(texts))

    def forward(self, texts: list[str], mlm_probability: float | None = None):
        """Vectors of ``texts``; with ``mlm_probability`` also (MLM logits, labels) of a masked copy.

        Methods call the module (not ``encode``) so that DDP's wrapper sees the forward pass, and
        everything of one step goes through one call (DDP allows one forward per backward).
        """
        if mlm_probability is None:
            plan, ready = self._plan_and_inputs(texts)
            if plan is not None:
                return self._bucketed(texts, plan, ready)
        enc = self.tokenize(texts)
        z = self.embed(enc)
        if mlm_probability is None:
            return z
        from .losses import mask_tokens

        tok = self.tokenizer
        special = special_tokens(enc["input_ids"], tok) | (enc["attention_mask"] == 0)
        ids, labels = mask_tokens(enc["input_ids"], special, tok.mask_token_id, len(tok), mlm_probability)
        states = self.encoder(**model_inputs(self.encoder, {**enc, "input_ids": ids}, self.device), return_dict=True,
                              **no_kv_cache(self.encoder.config)).last_hidden_state
        return z, self.mlm_head(states), labels

    def _bucketed(self, texts: list[str], plan: list[list[int]], ready: dict) -> torch.Tensor:
        """The vectors of ``texts``, in their order, from one embedding pass per bucket of ``plan``."""
        parts = torch.cat([self.embed(self._inputs([texts[i] for i in g], ready)) for g in plan])
        z = parts.new_empty(parts.shape)
        z[group_positions(plan, parts.device)] = parts  # differentiable: the gradient of row i goes back to its bucket
        return z


def unpadded_passes(model: nn.Module, cfg: Any, device: str, precision: str) -> bool:
    """``--set unpadded=1``: ``model`` runs each pass as one row of its real tokens where it can (else a warning says
    why and passes stay padded), in the dtype its evaluations and attention compute in (``eval_dtype``)."""
    if not isinstance(model, SentenceModel):
        warnings.warn(f"--set unpadded=1 has no effect on --method {cfg.method}: its module is not one sentence model; "
                      "passes stay padded", stacklevel=3)
        return False
    if not model.run_unpadded(device, DTYPES[eval_dtype(precision)]):
        return False
    announce(cfg.progress, "passes: each one row of its real tokens, variable-length attention (no padding)")
    return True


def special_tokens(ids: torch.Tensor, tokenizer: Any) -> torch.Tensor:
    """Where ``ids`` (on any device) hold one of the tokenizer's special tokens: its ``get_special_tokens_mask(ids,
    already_has_special_tokens=True)`` (membership in ``all_special_ids``), computed where the ids are, without
    reading them back to the host."""
    special = to_device({"ids": torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=ids.dtype)}, ids.device)["ids"]
    return torch.isin(ids, special)


def group_positions(groups: list[list[int]], device: torch.device) -> torch.Tensor:
    """The texts' positions, group after group, on ``device``, in a pinned copy (``torch.tensor(..., device=cuda)``
    would make the host wait for every kernel queued before it): rows made group by group go back to their texts'
    order through ``out[positions] = rows``."""
    return to_device({"positions": torch.tensor([i for g in groups for i in g])}, device)["positions"]


def unwrap(module: nn.Module) -> nn.Module:
    """The model inside a DDP wrapper (``--compile`` compiles the encoder in place: no wrapper)."""
    inner = getattr(module, "module", None)
    return inner if isinstance(inner, nn.Module) else module


def one_call_model(model: nn.Module, method: Any) -> SentenceModel | None:
    """The :class:`SentenceModel` of ``model`` when ``method`` embeds all of a step's texts in one call of it
    (``Method.splits_by_text``): a split step may then be cut by text, and one pass runs in length buckets."""
    inner = unwrap(model)
    return inner if isinstance(inner, SentenceModel) and method.splits_by_text() else None
