"""LoRA adapter folders: a peft adapter plus ``embench_adapter.json`` naming the base model it was
trained on (and its weights' fingerprint), the bidirectional setting (K and mode), prompt and pooling.

``load_model(BASE, adapter=DIR)`` (``--model BASE --adapter DIR``) puts the adapter on BASE after
checking BASE is the model the adapter was trained on; ``load_model(DIR)`` loads the base the folder
names. The adapter is merged into the weights for inference (no per-layer LoRA cost when encoding).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.atomic import write_json
from ..core.errors import EmbenchError, ModelLoadError
from .fingerprints import joined, weights_fingerprint

ADAPTER_META = "embench_adapter.json"
PEFT_CONFIG = "adapter_config.json"


@dataclass(frozen=True)
class AdapterInfo:
    folder: Path
    base_model: str
    base_fingerprint: str | None
    bidirectional_last: int | None
    prompt: str | None
    pooling: str | None
    bidirectional_mode: str | None = None  # absent from folders saved before the modes: those were trained in "mask"
    named_in: Path | None = None  # the file that names the base (embench_adapter.json, or peft's adapter_config.json)

    def describe(self) -> str:
        return self.folder.name

    def base_not_found(self, error: ModelLoadError) -> ModelLoadError:
        """``error`` (the base could not be loaded) naming the file that names the base: a peft folder's base is as
        it was given when the adapter was trained, a relative path read from the working directory."""
        where = self.named_in or self.folder
        return ModelLoadError(error.name, error.tried, f"the base model {self.base_model!r} is named by {where}"
                              f"{' (base_model_name_or_path)' if where.name == PEFT_CONFIG else ''}: correct it there, "
                              f"or load the adapter with --model BASE --adapter {self.folder}")

    def fingerprint(self) -> str:
        """sha256 over the adapter's weights and peft config."""
        h = hashlib.sha256()
        for p in sorted(self.folder.iterdir()):
            if p.suffix in (".safetensors", ".bin") or p.name == PEFT_CONFIG:
                h.update(p.name.encode() + p.read_bytes())
        return h.hexdigest()[:16]

    def attach(self, src: Any) -> Any:
        """``src`` (a loader source) with this adapter merged into its weights on load; refused when the
        base's weights are not the ones the adapter was trained on."""
        # adapters saved before a model's fingerprint covered its tokenizer (2026-11-28) name its weights' alone
        if self.base_fingerprint and src.fingerprint != self.base_fingerprint and (
                src.trained_folder is None or weights_fingerprint(src.trained_folder) != self.base_fingerprint):
            raise EmbenchError(
                f"adapter {self.folder} was trained on {self.base_model} (weights fingerprint {self.base_fingerprint}); "
                f"{src.display} has fingerprint {src.fingerprint}: load it with --model {self.base_model}"
            )
        inner, folder = src.load, self.folder

        def load() -> tuple[Any, Any]:
            model, tok = inner()
            try:
                from peft import PeftModel
            except ImportError:
                raise EmbenchError("--adapter needs the peft package (pip install 'embench[llm]')") from None
            try:
                model = PeftModel.from_pretrained(model, str(folder)).merge_and_unload()
            except (ValueError, KeyError, RuntimeError) as e:
                raise EmbenchError(f"adapter {folder} does not fit {src.display}: {e}") from None
            return model, tok

        return dataclasses.replace(src, load=load, fingerprint=joined(src.fingerprint, self.fingerprint()))


def is_adapter_folder(path: str | os.PathLike) -> bool:
    p = Path(path).expanduser()
    return p.is_dir() and (p / PEFT_CONFIG).is_file()


def read_adapter(path: str | os.PathLike, quiet: bool = False) -> AdapterInfo | None:
    """The adapter folder at ``path``; None (``quiet``) or an error when it is not one."""
    p = Path(path).expanduser()
    if not is_adapter_folder(p):
        if quiet:
            return None
        raise EmbenchError(f"--adapter {str(path)!r} is not a LoRA adapter folder (no {PEFT_CONFIG} in it)")
    meta: dict[str, Any] = {}
    if (p / ADAPTER_META).is_file():
        try:
            meta = json.loads((p / ADAPTER_META).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise EmbenchError(f"{p / ADAPTER_META}: cannot be read ({e})") from None
    named_in = p / ADAPTER_META
    if not meta.get("base_model"):  # a plain peft folder: the base it names
        named_in = p / PEFT_CONFIG
        try:
            meta["base_model"] = json.loads((p / PEFT_CONFIG).read_text(encoding="utf-8")).get("base_model_name_or_path")
        except (OSError, json.JSONDecodeError) as e:
            raise EmbenchError(f"{p / PEFT_CONFIG}: cannot be read ({e})") from None
    if not meta.get("base_model"):
        raise EmbenchError(f"adapter {p} does not name its base model: load it with --model BASE --adapter {p}")
    return AdapterInfo(p.resolve(), str(meta["base_model"]), meta.get("base_fingerprint"), meta.get("bidirectional_last"),
                       meta.get("prompt"), meta.get("pooling"), meta.get("bidirectional_mode"), named_in.resolve())


def write_adapter_meta(folder: Path, **meta: Any) -> None:
    write_json(Path(folder) / ADAPTER_META, meta)
