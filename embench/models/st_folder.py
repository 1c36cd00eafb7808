"""sentence-transformers model folders: ``modules.json`` read into what embench needs (the
transformer sub-folder, pooling, normalisation, maximum length, lower-casing) and ``Dense`` modules
loaded as ``activation(linear(x))``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from ..core.errors import EmbenchError


def read_json(path: Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def sentence_transformers_config(folder: Path) -> dict[str, Any] | None:
    """Pooling, normalisation, max length and sub-folder of a sentence-transformers folder."""
    modules_file = folder / "modules.json"
    if not modules_file.is_file():
        return None
    modules = read_json(modules_file)
    out: dict[str, Any] = {"transformer_path": folder, "normalize": False, "pooling": None, "unsupported": [], "dense": []}
    for m in modules:
        kind = m.get("type", "").rsplit(".", 1)[-1]
        sub = folder / m.get("path", "")
        if kind == "Transformer":
            out["transformer_path"] = sub
            for cfg_name in ("sentence_bert_config.json", "sentence_xlnet_config.json"):
                for base in (sub, folder):
                    if (base / cfg_name).is_file():
                        cfg = read_json(base / cfg_name)
                        out.setdefault("max_length", cfg.get("max_seq_length"))
                        out.setdefault("lowercase", bool(cfg.get("do_lower_case", False)))
        elif kind == "Pooling":
            out["pooling"] = _st_pooling(read_json(sub / "config.json"))
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

    cfg = read_json(folder / "config.json")
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
