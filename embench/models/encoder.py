"""How texts become vectors: the transformers implementation of the Encoder interface
(:class:`embench.encoding.encoder_interface.Encoder`).

An encoder knows nothing about tasks. The engine asks it for the token length of texts (to batch them by length)
and for the vectors of one batch; everything else (dedup, cache, progress) is the engine's job.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ..core.errors import EmbenchError
from ..core.hashing import stable_hash
from ..encoding.st_face import SentenceEncode, text_list
from .attention_masks import model_inputs
from .families import apply_prompt, num_layers
from .fast_tokens import pad_rows
from .kv_cache import no_kv_cache
from .live_fingerprint import Followed
from .poolers import VIEW_KEYS, needs_all_layers, view_keys
from .pooling import POOLERS, PoolInput, pooled_by
from .precision import gpu_attention
from .prompt_fit import lowered, prompt_truncation, prompted_token_ids
from .prompts import PromptViews, exclude_prompt_tokens
from .regional_compile import compile_layers
from .unpadded_batch import forward_packed

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass
class EncoderSettings:
    """Everything that changes the vectors a checkpoint gives, besides its weights."""

    pooling: str
    layer: int | None = None  # None = last layer; 0 = embedding output; negative counts from the end
    max_length: int = 512
    dtype: str = "fp32"
    normalize: bool = False
    lowercase: bool = False
    prompt: str = ""  # template with {text} (decoder LLM prompts, e.g. PromptEOL's)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in ("pooling", "layer", "max_length", "dtype", "normalize", "lowercase", "prompt")}
        d.update({**self.extra, **prompt_truncation(self.prompt)})  # a long text cut, not the prompt's end: other ids
        return d


class HFEncoder(PromptViews, SentenceEncode):
    """A ``transformers`` model + tokenizer + pooler.

    Inference runs under ``torch.inference_mode``. A non-fp32 ``dtype`` holds the weights in that dtype on a GPU
    (``weights_cast``) and runs as autocast over fp32 weights elsewhere (a CPU; a module under training).
    """
    fingerprint = Followed()  # a str, or a function of the weights now (a module's, a checkpoint's): live_fingerprint.py

    def __init__(
        self,
        config: Any,
        settings: EncoderSettings,
        *,
        name: str,
        fingerprint: str | Callable[[], str],
        source: str,
        device: str,
        load: Callable[[], tuple[torch.nn.Module, Any]],
        tokenizer: Any = None,
        revision: str | None = None,
    ):
        """``load`` returns (model, tokenizer); it runs on first use, so a run whose vectors are
        all cached never reads the weights."""
        self.config = config
        self.settings = settings
        self.name = name
        self.fingerprint = fingerprint
        self.source, self.device, self.revision = source, device, revision
        self._load = load
        self._model: torch.nn.Module | None = None
        self._tokenizer: Any = tokenizer
        self.pooler = POOLERS.get(settings.pooling)
        self.pooling = POOLERS.canonical(settings.pooling)
        self.num_layers = num_layers(config)
        layer = settings.layer if settings.layer is not None else self.num_layers
        if layer < 0:
            layer += self.num_layers + 1
        if not 0 <= layer <= self.num_layers:
            raise EmbenchError(
                f"--layer {settings.layer} is out of range for {name}: it has layers 0 (embedding output) "
                f"to {self.num_layers}"
            )
        self.layer = layer
        settings.extra = {**settings.extra, **view_keys(self.pooling, layer, self.num_layers, settings.extra)}
        self._dense_load: Callable[[], list[torch.nn.Module]] | None = None
        self._dense: list[torch.nn.Module] | None = None
        self.dense_modules: list[str] = []
        self._owner: HFEncoder = self  # the encoder holding the weights; views of it share them
        self.batch_tokens: int | None = None  # the engine's token budget for this encoder (None: the device's)
        self.compiled = False  # torch.compile the model's layers when it is loaded (load_model(..., compile=True))
        self.load_spec: tuple[str, dict[str, Any]] | None = None  # (name, load_model options): reloadable elsewhere
        self.prompt_set: Any = None  # the model's named prompts, for a side or task to pick from (models/prompts.py)
        self.graphs: Any = None  # CUDA graphs per batch shape (load_model(..., cuda_graphs=True): encoding/cuda_graphs.py)
        self.unpadded = False  # batches run as one row of real tokens (load_model(..., unpadded=True): unpadded_batch.py)

    def view(self, layer: int | None = None, pooling: str | None = None, final_norm: bool = False,
             normalize: bool | None = None) -> HFEncoder:
        """The same model and tokenisation pooled another way: ``layer`` (None = the last; 0 = embedding output;
        negative from the end) with ``pooling`` (None = this encoder's). The view shares the weights (loaded once),
        and its cache key is the one ``load_model(..., layer=, pooling=)`` gives, so vectors computed for a view are
        found by a later request for that encoder alone; an impossible view (a layer past the last, an unknown
        pooler) is an error here. ``final_norm``: the layer's states go through the model's final norm first (the
        model with the layers above removed, BeLLM Figure 4); ``normalize``: L2-normalised or not (None: as this)."""
        pooling = pooling or self.settings.pooling
        POOLERS.canonical(pooling)  # did-you-mean on a typo
        extra = {k: v for k, v in self.settings.extra.items() if k not in ("final_norm", *VIEW_KEYS)}
        normalize = self.settings.normalize if normalize is None else normalize
        settings = dataclasses.replace(self.settings, layer=layer, pooling=pooling, extra=extra, normalize=normalize)
        owner = self._owner
        v = HFEncoder(self.config, settings, name=self.name, fingerprint=self._fingerprint, source=self.source,
                      device=self.device, load=owner._load, tokenizer=owner._tokenizer, revision=self.revision)
        v._owner = owner
        v.batch_tokens = self.batch_tokens
        v.compiled, v.load_spec, v.prompt_set, v.graphs, v.unpadded = (self.compiled, self.load_spec, self.prompt_set,
                                                                        self.graphs, self.unpadded)
        v._dense_load, v.dense_modules = self._dense_load, list(self.dense_modules)
        if final_norm and v.layer < v.num_layers:  # the last layer's states are already normed
            v.settings.extra["final_norm"] = True
        return v

    def pass_key(self) -> tuple:
        """What one forward pass depends on: encoders with equal keys can share it (views of one model). The fingerprint as
        given (a module's function of its weights, not its value): asked per batch, it need not walk the weights."""
        s = self.settings
        return (id(self._owner), self._fingerprint, s.max_length, s.dtype, s.lowercase, s.prompt, self.device)

    def set_dense(self, load: Callable[[], list[torch.nn.Module]], names: list[str]) -> None:
        """sentence-transformers ``Dense`` modules applied after pooling (before normalisation)."""
        self._dense_load = load
        self.dense_modules = list(names)
        self.settings.extra["dense"] = list(names)

    def _apply_dense(self, pooled: torch.Tensor) -> torch.Tensor:
        if self._dense_load is None:
            return pooled
        if self._dense is None:
            self._dense = [m.to(self.device) for m in self._dense_load()]
        for m in self._dense:
            pooled = m(pooled)
        return pooled

    @property
    def model(self) -> torch.nn.Module:
        owner = self._owner
        if owner._model is None:
            with torch.inference_mode(False):  # not inference tensors (encode_views loads): writes bump _version
                model, tokenizer = owner._load()
                if owner.weights_cast:  # held in the run's dtype (cast on the host: the device never holds fp32 copies)
                    model = model.to(DTYPES[owner.settings.dtype])
                owner._model = model.eval().to(owner.device)
                if owner.compiled:  # torch.compile of each layer, shapes dynamic: one compile for every layer and shape
                    compile_layers(owner._model)
                if hasattr(owner._fingerprint, "loaded"):  # the weights as read: a write from now on re-keys them
                    owner._fingerprint.loaded(owner._model)
            owner._tokenizer = tokenizer if owner._tokenizer is None else owner._tokenizer
        return owner._model

    @property
    def tokenizer(self) -> Any:
        owner = self._owner
        if owner._tokenizer is None:
            owner.model  # noqa: B018  (loads both)
        return owner._tokenizer

    @property
    def loaded(self) -> bool:
        return self._owner._model is not None

    def pooler_head(self) -> Callable[[torch.Tensor], torch.Tensor] | None:
        head = getattr(self.model, "pooler", None)
        return head if callable(head) else None

    # -- Encoder interface -------------------------------------------------------------------
    def _prepare(self, texts: list[str]) -> list[str]:
        return apply_prompt(self.settings.prompt, lowered(texts, self.settings.lowercase))

    def pretokenize(self, texts: list[str]) -> dict[str, list[list[int]]]:
        """Token ids (and type ids where the model takes them) of each text, unpadded: tokenised once, padded per batch
        by :meth:`collate`. A text too long for a prompt with words after it is cut, not the prompt's end (as training)."""
        s = self.settings
        return prompted_token_ids(self.tokenizer, s.prompt, lowered(texts, s.lowercase), s.max_length, self._prepare(texts))

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        ids = self.pretokenize(texts)["input_ids"]
        return np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(texts))

    def collate(self, features: dict[str, list[list[int]]], shape: tuple[int, int] | None = None) -> dict[str, torch.Tensor]:
        """Pad pretokenised rows to the longest (or to ``shape``, rows x width) on the tokenizer's side, with their
        attention mask (:func:`~embench.models.fast_tokens.pad_rows`), on this encoder's device; run unpadded, with
        each row's length on the host (``lengths``: the packed row's size, known without asking the device)."""
        return pad_rows(features, self.tokenizer, self.device, shape)

    def tokenize(self, texts: list[str]) -> dict[str, torch.Tensor]:
        return self.collate(self.pretokenize(texts))

    def forward_hidden(self, enc: dict[str, torch.Tensor], all_layers: bool, **kwargs: Any):
        """Run the model on the padded batch; returns its output with ``hidden_states`` when ``all_layers``."""
        with self._autocast(), gpu_attention(self.device):
            return self.model(**model_inputs(self.model, enc, self.device), output_hidden_states=all_layers, return_dict=True,
                              **no_kv_cache(self.config), **kwargs)

    def encode_batch(self, texts: list[str]) -> np.ndarray:  # (n, dim); one text (a str) is a batch of one, not of letters
        return self.encode_views(text_list(texts, "encode_batch()"), [self])[0]

    @torch.inference_mode()
    def encode_views(self, texts: list[str], views: Sequence[HFEncoder],
                     enc: dict[str, torch.Tensor] | None = None, *, as_tensors: bool = False) -> list[Any]:
        """The vectors of one batch under each of ``views`` (views of this encoder: :meth:`view`), from ONE
        forward pass; every hidden state is asked for only when a view reads more than the last layer.
        Each view is pooled from the batch's states at once, so only pooled vectors outlive the batch.
        ``enc`` is the batch already tokenised (:meth:`collate` of :meth:`pretokenize`), as the engine passes it.
        Float32 arrays on the host, or with ``as_tensors`` float32 tensors left on the device (the engine
        copies many batches' vectors at once)."""
        for v in views:
            if v.pass_key() != self.pass_key():
                raise EmbenchError(f"{v.name} (layer {v.layer}, {v.pooling}) is not a view of this encoder: "
                                   "views share one model, maximum length, dtype and prompt")
        if enc is None and not len(texts):  # no rows of the width one text gets (a Dense head may change it)
            return [p[:0] for p in self.encode_views([""], views, as_tensors=as_tensors)]
        enc = self.tokenize(texts) if enc is None else enc
        hidden = self._hidden(enc, any(v.layer != v.num_layers or needs_all_layers(v.pooling) for v in views))
        pooled = [v._pool(hidden, enc["attention_mask"]) for v in views]
        return pooled if as_tensors else [p.cpu().numpy() for p in pooled]

    def _hidden(self, enc: dict[str, torch.Tensor], all_layers: bool) -> tuple:
        """The batch's states where the poolers index them: every layer's, or only the last (``(None, ..., last)``). A
        batch with host ``lengths`` runs as one unpadded row, its states put back in the padded layout (``forward_packed``)."""
        if self.unpadded and "lengths" in enc:
            with self._autocast():
                return forward_packed(self.model, enc, self.tokenizer.padding_side == "left", all_layers, self.num_layers,
                                      **no_kv_cache(self.config))
        out = self.forward_hidden(enc, all_layers)
        return tuple(out.hidden_states) if all_layers else (None,) * self.num_layers + (out.last_hidden_state,)

    def _pool(self, hidden: tuple[torch.Tensor, ...], mask: torch.Tensor) -> torch.Tensor:
        if self.settings.extra.get("final_norm"):
            from .layer_stack import final_norm

            norm = final_norm(self.model)
            if norm is not None:
                with self._autocast():
                    hidden = (*hidden[: self.layer], norm(hidden[self.layer]), *hidden[self.layer + 1 :])
        if n := self.settings.extra.get("prompt_tokens_excluded"):  # Pooling(include_prompt=False): models/prompts.py
            mask = exclude_prompt_tokens(mask, n)
        with self._autocast():  # no autocast where the weights themselves are bf16/fp16 (weights_cast)
            pooled = pooled_by(self.pooler, PoolInput(hidden, mask, self.layer, self.pooler_head()), self.pooling)
            if self.weights_cast:  # the sentence-transformers Dense modules stay fp32
                pooled = pooled.float()
            pooled = self._apply_dense(pooled)
        pooled = pooled.float()
        if self.settings.normalize:
            pooled = torch.nn.functional.normalize(pooled, p=2, dim=-1)
        return pooled

    def cache_key(self) -> str:
        """One key per set of vectors: the layer is keyed as resolved, and the last layer (however it was asked
        for: by default, by number as a grid job pins it, or as -1) as None, the default's key. Keying the
        setting as given once made `embench grid` re-encode what `embench run` had cached for the same weights."""
        layer = None if self.layer == self.num_layers else self.layer
        return stable_hash({"fingerprint": self.fingerprint, **self.settings.to_dict(), "layer": layer, "pooling": self.pooling}, 24)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name, "source": self.source, "revision": self.revision,
            "fingerprint": self.fingerprint, "device": self.device,
            "num_layers": self.num_layers,
            "architecture": (getattr(self.config, "architectures", None) or [type(self.config).__name__])[0],
            **self.settings.to_dict(),
            "pooling": self.pooling, "layer": self.layer,
        }

    @property
    def weights_cast(self) -> bool:
        """True where the weights themselves are held in bf16/fp16 (a GPU, a checkpoint the loader read:
        ``settings.extra["precision"] == "weights"``); elsewhere a non-fp32 dtype runs as autocast over fp32 weights."""
        return self.settings.extra.get("precision") == "weights"

    def _autocast(self):
        dtype = DTYPES[self.settings.dtype]
        if dtype == torch.float32 or self.weights_cast:
            return contextlib.nullcontext()
        kind = "cuda" if self.device.startswith("cuda") else "cpu"
        return torch.autocast(device_type=kind, dtype=dtype)
