"""An in-memory ``SentenceTransformer`` recognised as the folder it was loaded from.

``embench.evaluate(SentenceTransformer(path))`` would otherwise fingerprint the object's parameters and
encode everything again under a key of its own, although ``embench run -m path`` (or the alias that names
that folder) has cached the very same vectors. When the object is still what its folder holds (every
weight equal to the folder's file, the same modules, no ``truncate_dim``, and the maximum length, lower-casing,
prompts and default prompt that ``load_model`` reads from the folder), embench loads the folder itself: one set
of weights, one cache and one record whatever the object. The settings are compared with the folder as loaded, not
with one file: sentence-transformers 6 saves no ``max_seq_length`` (the tokenizer's ``model_max_length`` is it).
Anything that differs (a fine-tuned object, a changed ``max_seq_length``, a prompt or truncation of its own, Dense
layers) keeps the object path of :mod:`embench.models.foreign`, which is always right, only slower.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .foreign import encode_attributes
from .prompts import template_of
from .st_folder import sentence_transformers_config


def folder_encoder(obj: Any, load: Callable[[Path], Any]) -> Any | None:
    """``load(folder)``, the encoder of the folder ``obj`` was loaded from, when ``obj`` still encodes as it: the
    folder's modules and weights (:func:`source_folder`) and the settings the loader resolved; else None."""
    root = source_folder(obj)
    if root is None:
        return None
    encoder = load(root)
    return encoder if _settings_as_loaded(obj, encoder) else None


def source_folder(obj: Any) -> Path | None:
    """The sentence-transformers folder whose modules and weights ``obj`` still has, or None (not one, changed since,
    or truncating its vectors: the folder's encoder does not)."""
    try:
        model = obj[0].auto_model
        folder = Path(model.name_or_path)
    except (TypeError, AttributeError, IndexError, KeyError):
        return None
    root = next((f for f in (folder, folder.parent) if (f / "modules.json").is_file()), None)
    cfg = sentence_transformers_config(root) if root is not None else None
    if cfg is None or cfg["unsupported"] or cfg["dense"] or "truncate_dim" in encode_attributes(obj):
        return None
    kinds = [type(m).__name__ for m in obj]
    expected = ["Transformer", "Pooling"] + (["Normalize"] if cfg["normalize"] else [])
    if kinds != expected or Path(cfg["transformer_path"]).resolve() != folder.resolve():
        return None
    if not _pooling_as_saved(obj[1], cfg["pooling"]):
        return None
    return root if _weights_as_saved(model, folder) else None


def _settings_as_loaded(obj: Any, encoder: Any) -> bool:
    """``obj`` encodes as ``encoder`` (its folder loaded): the maximum length the loader resolved (a folder saved by
    sentence-transformers 6 names none: the tokenizer's), the lower-casing, the prompts with text and the default
    prompt, and the default prompt's tokens pooled or left out (``include_prompt``) alike."""
    s, own = encoder.settings, encode_attributes(obj)
    prompts = encoder.prompt_set.named() if encoder.prompt_set is not None else {}
    prefix = own.get("prompts", {}).get(own.get("default_prompt_name"), "")
    pooled = bool(getattr(obj[1], "include_prompt", True))
    return (getattr(obj, "max_seq_length", None) == s.max_length and bool(getattr(obj[0], "do_lower_case", False)) == s.lowercase
            and own.get("prompts", {}) == prompts and template_of(prefix, s.lowercase) == s.prompt
            and (not prefix or pooled != bool(s.extra.get("prompt_tokens_excluded"))))


def _pooling_as_saved(pooling: Any, saved: str | None) -> bool:
    """The object's pooling mode is the one embench reads from the folder (the saved names differ between
    sentence-transformers versions: ``pooling_mode_mean_tokens`` or ``pooling_mode: mean``)."""
    from ..core.errors import EmbenchError
    from .pooling_names import pooler_of

    try:
        return hasattr(pooling, "get_config_dict") and pooler_of(pooling.get_config_dict()) == saved
    except EmbenchError:
        return False


def _weights_as_saved(model: Any, folder: Path) -> bool:
    """Every tensor of the folder's safetensors file(s) equal to the module's (a .bin checkpoint: not checked, False)."""
    import torch
    from safetensors import safe_open

    files = sorted(folder.glob("*.safetensors"))
    if not files:
        return False
    state = model.state_dict()
    seen = 0
    for f in files:
        with safe_open(str(f), framework="pt") as handle:
            for key in handle.keys():  # noqa: SIM118 (safe_open is no dict)
                mine = state.get(key)
                if mine is None:
                    mine = next((t for k, t in state.items() if k.endswith("." + key) or key.endswith("." + k)), None)
                if mine is None:  # a tensor the model does not have (position_ids): its load ignored it too
                    continue
                saved = handle.get_tensor(key)
                if mine.shape != saved.shape or not torch.equal(mine.detach().cpu().to(saved.dtype), saved):
                    return False
                seen += 1
    return seen > 0


def folder_name(folder: Path) -> str:
    """The name ``embench run`` stores a folder's records under: the alias that resolves to it, else the folder's name."""
    from .aliases import ALIASES

    for alias in ALIASES.names():
        try:
            if Path(ALIASES.get(alias)()).resolve() == folder.resolve():
                return alias
        except (OSError, FileNotFoundError):
            continue
    return folder.name
