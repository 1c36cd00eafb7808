"""Training configuration: one typed object, built in layers and printed whole by ``--show``.

The fields and the file reader; ``configure.py`` builds a config from its layers (method
defaults, recipe, file, command line). Options a method owns (temperature, crop sizes, ...) live in
its own dataclass, nested here as ``method_options``.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import EmbenchError
from ..core.paths import not_there
from ..core.yaml_text import load_yaml, yaml_error

PRECISIONS = ("auto", "fp32", "bf16-mixed", "fp16-mixed", "bf16")
OPTIMIZERS = ("adamw", "adam")  # torch.optim.AdamW, torch.optim.Adam (schedule.make_optimizer)


@dataclass
class TrainConfig:
    """Everything that decides a training run. ``None`` = the method's (or recipe's) default."""

    method: str = "unsup-simcse"
    recipe: str | None = None  # the preset this configuration started from (recipes.py)
    model: str | None = "all-MiniLM-L6-v2"  # a recipe sets its paper's model, or None when it needs --model
    revision: str | None = None  # hub revision (commit, branch or tag) of a hub id --model; None: the default branch
    data: list[str] = field(default_factory=list)  # paths, or keywords: corpora, snli, 20newsgroups
    data_root: str | None = None  # for the keywords and for evaluation (default: $EMBENCH_DATA)
    out: str = "runs/train"
    # model
    family: str | None = None  # model family (embench list families); default: detected
    prompt: str | None = None  # template with {text} applied to every training text (decoder LLMs)
    from_scratch: bool = False  # random initialisation of the model's config (cropping paper §3.4)
    model_config: dict[str, Any] = field(default_factory=dict)  # config overrides, e.g. num_hidden_layers
    pooling: str | None = None  # embench pooler used in training and at test time
    dropout: float | None = None  # overrides hidden and attention dropout
    freeze_embeddings: bool = False
    freeze_layers: int = 0  # the first n transformer layers
    lora_r: int = 0  # > 0: train LoRA adapters of this rank instead of the weights (peft)
    lora_alpha: float = 32.0
    lora_dropout: float = 0.1
    lora_targets: list[str] | str | None = None  # default: every linear layer ("all-linear")
    load_kbit: int = 0  # 4 or 8: base weights quantised under the LoRA adapters (QLoRA; train/kbit.py); 0 = not
    # optimisation
    batch_size: int | None = None  # GLOBAL batch: over all processes and accumulation steps
    grad_accumulation: int = 1  # micro-batches per step; contrastive losses still see the whole batch
    optimizer: str = "adamw"  # adamw | adam
    lr: float | None = None
    weight_decay: float = 0.0
    warmup_ratio: float | None = None  # of the run's steps, or of one epoch's (warmup_of)
    warmup_of: str = "run"  # run | epoch (the cropping code warms up over 10% of ONE epoch)
    warmup_steps: int | None = None  # a number of warm-up steps instead of warmup_ratio (AnglE's trainer: 100)
    lr_schedule: str = "linear"  # linear (warm-up, then decay to 0) | constant (after the warm-up: JTCSE's scripts)
    epochs: float | None = None
    max_steps: int | None = None
    grad_clip: float = 1.0
    max_length: int | None = None
    max_examples: int | None = None  # use only the first n examples of the data
    drop_last: bool = False  # an epoch's last, smaller batch left out (batch_order.py); the authors' loaders train on it
    seed: int = 42
    # machinery
    device: str | None = None
    precision: str = "auto"  # auto (bf16-mixed on GPUs that have it, else fp32) | fp32 | bf16-mixed | fp16-mixed (loss scaled) | bf16 (weights too)
    gradient_checkpointing: bool = False
    auto_fit: bool = True  # a step that would not fit: checkpointing in buckets, or more micro-batches (fit_memory.py)
    group_by_length: bool = True  # a split step's passes group texts of like length (less padding): accumulation.py
    bucket_tokens: int = 8192  # with group_by_length: one pass over more padded tokens runs in length buckets (module.py)
    bucket_min_tokens: int | None = None  # what a smaller bucket costs in the cuts (length_groups); None: bucket_tokens / 4
    unpadded: bool = False  # each pass as one row of real tokens, variable-length attention (GPU, bf16/fp16; module.py)
    compile: bool = False
    eval_steps: int | None = None  # 0 = no evaluation; the last step is then the kept checkpoint
    eval_tasks: list[str] | None = None  # default ["STSBenchmark-dev"]; the first selects the best checkpoint
    eval_analyses: list[str] = field(default_factory=list)  # e.g. knn:20newsgroups
    select_on: str | None = None  # the metric that picks the best checkpoint (default: the first)
    select_initial: bool = False  # may the untrained model (step 0) be kept as the best? (the authors': no)
    eval_max_length: int | None = None  # default: the backbone's own maximum (untruncated, as the authors evaluate)
    export_max_length: int | None = None  # the saved checkpoint's; default: the backbone's own maximum
    eval_batch_size: int = 128
    save_every: int = 0  # > 0: keep a checkpoint series OUT/checkpoints/step-NNNNNN every n steps
    save_steps: int | None = None  # resume checkpoints (default: eval_steps, else 500)
    log_steps: int = 10
    resume: bool = False
    overwrite: bool = False  # a run already in --out: its outputs removed first (else refused: previous_run.py)
    progress: bool = True
    tensorboard: bool = False
    method_options: Any = field(default_factory=dict)  # the method's own options (a dataclass once resolved)

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        opts = self.method_options
        d["method_options"] = dataclasses.asdict(opts) if dataclasses.is_dataclass(opts) else dict(opts)
        return json.loads(json.dumps(d, default=str))


FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig)}

# options with no flag of their own on `embench train`: reached through --set key=value (or a config file)
SET_ONLY = frozenset({
    "model_config", "dropout", "load_kbit", "optimizer", "weight_decay", "warmup_ratio", "warmup_of", "warmup_steps",
    "lr_schedule", "grad_clip", "group_by_length", "bucket_tokens", "bucket_min_tokens", "unpadded", "select_initial",
    "eval_max_length", "export_max_length", "eval_batch_size", "log_steps", "method_options", "drop_last"})


def option_kinds(f: dataclasses.Field) -> set[str]:
    """The types a dataclass field's annotation allows, as written: ``{"int", "None"}`` for ``int | None``, whether
    annotations are strings (``from __future__ import annotations``) or the types themselves (a plug-in's)."""
    text = f.type.__name__ if isinstance(f.type, type) else str(f.type).replace("typing.", "")
    if text.startswith("Optional[") and text.endswith("]"):  # typing.Optional[int], as a plug-in may write it
        text = text[len("Optional["):-1] + " | None"
    return {kind.strip() for kind in text.split("|")}


# options that take text alone: a --set value is kept as written (--set revision=2024 is the tag, not a number)
TEXT_OPTIONS = frozenset(name for name, f in FIELDS.items() if option_kinds(f) <= {"str", "None"})


# options whose flag is not their name with dashes (--progress does not exist: --quiet turns it off)
FLAGS = {"data": "--train-data", "data_root": "--data", "eval_tasks": "--eval-task", "eval_analyses": "--eval-analysis",
         "lora_targets": "--lora-target", "progress": "--set progress"}


def option_flag(name: str) -> str:
    """How the command line spells the option ``name``: ``--max-length``, or ``--set eval_max_length``."""
    return FLAGS.get(name) or (f"--set {name}" if name in SET_ONLY else "--" + name.replace("_", "-"))


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Options from a ``.yaml``/``.yml`` or ``.toml`` file (a flat mapping; a ``train`` table also works)."""
    p = Path(path)
    if not p.is_file():
        raise EmbenchError(f"--config {p} {not_there(p)}")
    try:
        if p.suffix == ".toml":
            with open(p, "rb") as f:
                raw = tomllib.load(f)
        elif p.suffix in (".yaml", ".yml"):
            import yaml

            with open(p, encoding="utf-8") as f:
                text = f.read()
            # a config names options, it never needs YAML's anchors and aliases; refused, since a few lines of
            # nested aliases (a "billion laughs") expand into more than any memory holds once traversed
            if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, Loader=yaml.SafeLoader)):
                raise EmbenchError(f"--config {p}: YAML aliases (*name) are not accepted in a training config; "
                                   "write each value out")
            raw = _exponent_numbers(load_yaml(text) or {})  # a key given twice refused, as in every YAML embench reads
        else:
            raise EmbenchError(f"--config {p}: expected a .yaml, .yml or .toml file")
    except (tomllib.TOMLDecodeError, ValueError) as e:
        raise EmbenchError(f"--config {p}: cannot parse it: {e}") from None
    except Exception as e:  # yaml.YAMLError: at the parser's line and column
        if type(e).__module__.startswith("yaml"):
            raise EmbenchError(f"--config {yaml_error(str(p), e)}") from None
        raise
    if not isinstance(raw, dict):
        raise EmbenchError(f"--config {p}: expected a mapping of option: value")
    if set(raw) == {"train"} and isinstance(raw["train"], dict):
        raw = raw["train"]
    return raw


# YAML 1.1 (PyYAML) reads a number written with an exponent but no dot (`lr: 1e-4`, `lr: 5E-5`) as a string, where
# YAML 1.2, TOML and JSON read a number: such values are taken as the numbers they spell
_EXPONENT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def _exponent_numbers(value: Any) -> Any:
    if isinstance(value, str) and _EXPONENT.fullmatch(value.strip()):
        return float(value)
    if isinstance(value, dict):
        return {k: _exponent_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_exponent_numbers(v) for v in value]
    return value


def parse_override(item: str) -> tuple[str, Any]:
    """``key=value`` from ``--set``; the value is read as JSON when it parses (numbers, lists, true), except that an
    option taking text alone (``TEXT_OPTIONS``) keeps what was written. Each value is typed by its option later
    (``resolution.typed``: ``select_initial=False`` is False there, ``eval_tasks=STS12`` a list of one)."""
    if "=" not in item:
        raise EmbenchError(f"--set {item!r}: expected key=value")
    key, raw = item.split("=", 1)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    if key.strip().replace("-", "_") in TEXT_OPTIONS and value is not None and not isinstance(value, str):
        value = raw
    return key.strip(), value
