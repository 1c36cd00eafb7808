"""sentence-transformers model folders: ``modules.json`` read into what embench needs (the
transformer sub-folder, pooling, normalisation, maximum length, lower-casing) and ``Dense`` modules
loaded as ``activation(linear(x))``. Pooling names are translated by :mod:`embench.models.pooling_names`
(the table the checkpoint writer uses too); [CLS] pooling followed by a copy of the model's own pooler
head is read as embench's ``cls``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from ..core.errors import EmbenchError
from ..core.paths import within
from .pooling_names import pooler_of


def read_json(path: Path) -> Any:
    """A JSON file of a model folder; a damaged one is an error naming it (one line, no traceback)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise EmbenchError(f"{path}: not readable JSON ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None


def sentence_transformers_config(folder: Path) -> dict[str, Any] | None:
    """Pooling, normalisation, max length and sub-folder of a sentence-transformers folder."""
    modules_file = folder / "modules.json"
    if not modules_file.is_file():
        return None
    modules = read_json(modules_file)
    if not isinstance(modules, list) or not all(isinstance(m, dict) and isinstance(m.get("path", ""), str)
                                                 and isinstance(m.get("type", ""), str) for m in modules):
        raise EmbenchError(f"{modules_file}: expected a list of modules, each with a 'type' and a 'path'")
    out: dict[str, Any] = {"transformer_path": folder, "normalize": False, "pooling": None, "unsupported": [], "dense": []}
    for m in modules:
        kind = m.get("type", "").rsplit(".", 1)[-1]
        # a module's folder lies inside the model folder: '../other' or an absolute path would load other weights
        sub = within(folder, m.get("path", ""), f"{modules_file}: the {kind or 'module'} path")
        if kind == "Transformer":
            out["transformer_path"] = sub
            for cfg_name in ("sentence_bert_config.json", "sentence_xlnet_config.json"):
                for base in (sub, folder):
                    if (base / cfg_name).is_file():
                        cfg = read_json(base / cfg_name)
                        out.setdefault("max_length", cfg.get("max_seq_length"))
                        out.setdefault("lowercase", bool(cfg.get("do_lower_case", False)))
        elif kind == "Pooling":
            out["pooling"] = pooler_of(read_json(sub / "config.json"), str(sub / "config.json"))
        elif kind == "Normalize":
            out["normalize"] = True
        elif kind == "Dense":
            if out["normalize"]:
                out["unsupported"].append("Dense after Normalize")
            out["dense"].append(sub)
        else:
            out["unsupported"].append(kind)
    if out["pooling"] == "cls_before_pooler" and len(out["dense"]) == 1 and is_pooler_head(out["transformer_path"], out["dense"][0]):
        out["pooling"], out["dense"] = "cls", []  # [CLS] through the model's own head: embench's cls pooling
    return out


def is_pooler_head(transformer: Path, dense: Path) -> bool:
    """Whether a ``Dense`` module is the transformer's pooler head (BERT's dense + tanh over [CLS]) copied:
    Tanh, square, and weights equal to the ``pooler.dense`` tensors of the transformer's safetensors.

    That is how a checkpoint trained with ``cls`` pooling (supervised SimCSE's kept MLP) is written for
    sentence-transformers, which has no pooler-head module; read back, it is embench's ``cls`` again (the
    head of the loaded model, so that ``--layer`` and the cache key mean what they mean for ``cls``)."""
    cfg = read_json(dense / "config.json") if (dense / "config.json").is_file() else None
    if not (isinstance(cfg, dict) and cfg.get("activation_function") == _ACTIVATION_PREFIX + "activation.Tanh"
            and cfg.get("in_features") == cfg.get("out_features") and cfg.get("bias", True) and not cfg.get("use_residual")):
        return False
    head, theirs = _safetensors(dense, lambda k: k in ("linear.weight", "linear.bias")), {}
    for k, v in _safetensors(transformer, lambda k: k.endswith(("pooler.dense.weight", "pooler.dense.bias"))).items():
        theirs["linear." + k.rsplit(".", 1)[-1]] = v
    return len(head) == 2 and head.keys() == theirs.keys() and all(
        head[k].shape == theirs[k].shape and torch.equal(head[k], theirs[k]) for k in head)


def _safetensors(folder: Path, wanted: Any) -> dict[str, torch.Tensor]:
    """The tensors of ``folder``'s safetensors files whose names ``wanted`` accepts (only those are read)."""
    from safetensors import safe_open

    found: dict[str, torch.Tensor] = {}
    for f in sorted(folder.glob("*.safetensors")):
        with safe_open(str(f), framework="pt") as handle:
            for key in handle.keys():  # noqa: SIM118 (safe_open is no dict)
                if wanted(key):
                    found[key] = handle.get_tensor(key)
    return found


_ACTIVATION_PREFIX = "torch.nn.modules."


def load_dense(folder: Path) -> torch.nn.Module:
    """A sentence-transformers ``Dense`` module folder as ``activation(linear(x))``.

    Reads ``config.json`` (in/out features, bias, activation class under ``torch.nn``) and the
    weights (``model.safetensors`` or ``pytorch_model.bin``, keys ``linear.weight``/``linear.bias``).
    """
    import importlib

    cfg = read_json(folder / "config.json")
    act_path = cfg.get("activation_function", "torch.nn.modules.activation.Tanh") if isinstance(cfg, dict) else None
    if not isinstance(act_path, str) or not act_path.startswith(_ACTIVATION_PREFIX):
        raise EmbenchError(f"{folder / 'config.json'}: activation_function {act_path!r} is not a torch.nn module")
    if cfg.get("use_residual"):  # recent sentence-transformers: x + activation(linear(x)), not read here
        raise EmbenchError(f"{folder / 'config.json'}: a Dense module with use_residual is not supported")
    module_name, _, cls_name = act_path.rpartition(".")
    try:
        act_cls = getattr(importlib.import_module(module_name), cls_name)
        if not (isinstance(act_cls, type) and issubclass(act_cls, torch.nn.Module)):
            raise TypeError(cls_name)
        activation = act_cls()
        linear = torch.nn.Linear(int(cfg["in_features"]), int(cfg["out_features"]), bias=bool(cfg.get("bias", True)))
    except (ImportError, AttributeError, TypeError, KeyError, ValueError) as e:
        raise EmbenchError(f"{folder / 'config.json'}: not a Dense module embench can build (activation_function "
                           f"{act_path!r}, in_features, out_features; {type(e).__name__}: {e})") from None
    if (folder / "model.safetensors").is_file():
        from safetensors.torch import load_file

        state = load_file(str(folder / "model.safetensors"))
    elif (folder / "pytorch_model.bin").is_file():
        try:  # weights only: a pickle that would run code is refused by torch, and named here
            state = torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
        except Exception as e:  # noqa: BLE001 (UnpicklingError, RuntimeError, EOFError: all one answer)
            raise EmbenchError(f"{folder / 'pytorch_model.bin'}: not a plain tensor file that can be read without "
                               f"running code ({type(e).__name__}); save the Dense weights as model.safetensors") from None
    else:
        raise EmbenchError(f"{folder}: a sentence-transformers Dense module without weights (model.safetensors or pytorch_model.bin)")
    try:
        linear.load_state_dict({k.removeprefix("linear."): v for k, v in state.items()})
    except RuntimeError as e:
        raise EmbenchError(f"{folder}: Dense weights do not match its config.json ({str(e).splitlines()[0]})") from None
    return torch.nn.Sequential(linear, activation).eval()
