"""Training configuration: one typed object, read from a YAML or TOML file and overridden on the CLI.

Defaults that depend on the method (learning rate, pooling, maximum length, ...) are ``None`` here
and filled in by :func:`resolve` from the method's own defaults (``methods.py``), which follow the
SimCSE and cropping papers (``docs``: papers 000 and 001, Table A.1 and §3.1).
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import EmbenchError
from ..core.registry import nearest


@dataclass
class TrainConfig:
    """Everything that decides a training run. ``None`` = the method's default."""

    method: str = "unsup-simcse"
    model: str = "all-MiniLM-L6-v2"
    data: list[str] = field(default_factory=list)  # paths, or keywords: corpora, snli, 20newsgroups
    data_root: str | None = None  # for the keywords and for STS-B dev (default: $EMBENCH_DATA)
    out: str = "runs/train"
    # model
    from_scratch: bool = False  # random initialisation of the model's config (cropping paper §3.4)
    model_config: dict[str, Any] = field(default_factory=dict)  # config overrides, e.g. num_hidden_layers
    pooling: str | None = None  # embench pooler used in training and at test time
    mlp: str | None = None  # none | train (SimCSE unsup: MLP in training only) | keep (SimCSE sup)
    dropout: float | None = None  # overrides hidden and attention dropout
    freeze_embeddings: bool = False
    freeze_layers: int = 0  # the first n transformer layers
    # objective
    temperature: float = 0.05
    hard_negative_weight: float = 1.0  # alpha of SimCSE Eq. 8 (own hard negative only)
    mlm_weight: float = 0.0  # lambda of SimCSE App. D: loss + lambda * MLM
    mlm_probability: float = 0.15
    # crops (cropping paper §3.1 / A.1)
    crop_sentences: int = 2
    crop_min_chars: int = 100
    crop_max_chars: int = 250
    # optimisation
    batch_size: int | None = None  # global batch (split over DDP processes)
    lr: float | None = None
    weight_decay: float = 0.0
    warmup_ratio: float = 0.1
    epochs: float = 1.0
    max_steps: int | None = None
    grad_clip: float = 1.0
    max_length: int | None = None
    max_examples: int | None = None  # use only the first n examples of the data
    seed: int = 42
    # machinery
    device: str | None = None
    bf16: bool | None = None  # None = on where the GPU supports it; never on CPU
    compile: bool = False
    eval_steps: int = 250  # 0 = no evaluation; the last step is then the kept checkpoint
    eval_max_length: int | None = None
    eval_batch_size: int = 128
    save_steps: int | None = None  # resume checkpoints (default: eval_steps, else 500)
    log_steps: int = 10
    resume: bool = False
    progress: bool = True
    tensorboard: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig)}


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Options from a ``.yaml``/``.yml`` or ``.toml`` file (a flat mapping; a ``train`` table also works)."""
    p = Path(path)
    if not p.is_file():
        raise EmbenchError(f"--config {p}: no such file")
    try:
        if p.suffix == ".toml":
            with open(p, "rb") as f:
                raw = tomllib.load(f)
        elif p.suffix in (".yaml", ".yml"):
            import yaml

            with open(p, encoding="utf-8") as f:
                raw = yaml.safe_load(f) or {}
        else:
            raise EmbenchError(f"--config {p}: expected a .yaml, .yml or .toml file")
    except (tomllib.TOMLDecodeError, ValueError) as e:
        raise EmbenchError(f"--config {p}: cannot parse it: {e}") from None
    except Exception as e:  # yaml.YAMLError carries the line in its message
        if type(e).__module__.startswith("yaml"):
            raise EmbenchError(f"--config {p}: cannot parse it: {e}") from None
        raise
    if not isinstance(raw, dict):
        raise EmbenchError(f"--config {p}: expected a mapping of option: value")
    if set(raw) == {"train"} and isinstance(raw["train"], dict):
        raw = raw["train"]
    return raw


def make_config(file: str | Path | None = None, **overrides: Any) -> TrainConfig:
    """A config from an optional file, then ``overrides`` (``None`` values are ignored).

    >>> make_config(method="crop", model="all-MiniLM-L6-v2", data=["20newsgroups"], max_steps=100)  # doctest: +SKIP
    """
    values: dict[str, Any] = {}
    if file is not None:
        values.update(_checked(read_config_file(file), f"--config {file}"))
    values.update(_checked({k: v for k, v in overrides.items() if v is not None}, "option"))
    if isinstance(values.get("data"), (str, Path)):
        values["data"] = [values["data"]]
    if "data" in values:
        values["data"] = [str(d) for d in values["data"]]
    return TrainConfig(**values)


def _checked(raw: dict[str, Any], where: str) -> dict[str, Any]:
    out = {}
    for key, value in raw.items():
        name = key.replace("-", "_")
        if name not in FIELDS:
            hint = nearest(name, list(FIELDS))
            did = f" Did you mean {', '.join(repr(h) for h in hint)}?" if hint else ""
            raise EmbenchError(f"{where}: unknown training option {key!r}.{did}")
        out[name] = value
    return out


def parse_override(item: str) -> tuple[str, Any]:
    """``key=value`` from ``--set``; the value is read as JSON when it parses (numbers, lists, true)."""
    if "=" not in item:
        raise EmbenchError(f"--set {item!r}: expected key=value")
    key, raw = item.split("=", 1)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value
