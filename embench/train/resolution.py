"""A training configuration made complete and checked, before anything is loaded."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
from collections.abc import Callable
from dataclasses import replace
from os import PathLike
from typing import Any

from ..core.defaults import SEED_MAX
from ..core.errors import EmbenchError
from ..core.length_cuts import FLOOR_SHARE
from ..core.registry import nearest
from ..core.values import YES_NO, as_bool
from ..models.families import FAMILIES, check_prompt
from ..models.pooling import POOLERS
from .config import OPTIMIZERS, PRECISIONS, TrainConfig, option_flag, option_kinds
from .kbit import check_kbit
from .methods import METHODS
from .metrics_log import TENSORBOARD_MISSING
from .temperature import check_temperature

FALLBACKS = {"pooling": "mean", "lr": 3e-5, "batch_size": 64, "max_length": 128, "epochs": 1.0, "warmup_ratio": 0.0,
             "eval_steps": 0}


def resolve(cfg: TrainConfig) -> TrainConfig:
    """``cfg`` with the method's options as its dataclass, fallbacks filled in and values checked."""
    key = METHODS.canonical(cfg.method)
    method = METHODS.get(key)
    filled = {k: v for k, v in FALLBACKS.items() if getattr(cfg, k) is None}
    cfg = replace(cfg, method=key, method_options=_options(method, cfg.method_options), **filled)
    cfg = replace(cfg, **typed(TrainConfig, {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}, option_flag))
    if cfg.eval_steps and cfg.eval_tasks is None and not cfg.eval_analyses:
        cfg = replace(cfg, eval_tasks=["STSBenchmark-dev"])
    # named by option_flag: log_steps and the bucket options have no flag of their own (--set log_steps=...)
    for name, value, low in (("batch_size", cfg.batch_size, 2), ("max_length", cfg.max_length, 4),
                             ("log_steps", cfg.log_steps, 1), ("grad_accumulation", cfg.grad_accumulation, 1),
                             ("bucket_tokens", cfg.bucket_tokens, 0),
                             ("bucket_min_tokens", 0 if cfg.bucket_min_tokens is None else cfg.bucket_min_tokens, 0)):
        if value < low:
            raise EmbenchError(f"{option_flag(name)} must be at least {low}, got {value}")
    if cfg.bucket_min_tokens is None:  # a bucket counted as at least a quarter of the budget, as the engine's batches
        cfg = replace(cfg, bucket_min_tokens=cfg.bucket_tokens // FLOOR_SHARE)
    _check_numbers(vars(cfg))
    if cfg.precision not in PRECISIONS:
        raise EmbenchError(f"--precision must be one of {', '.join(PRECISIONS)}, got {cfg.precision!r}")
    if cfg.warmup_of not in ("run", "epoch"):
        raise EmbenchError(f"{option_flag('warmup_of')} must be run or epoch, got {cfg.warmup_of!r}")
    if cfg.optimizer not in OPTIMIZERS:  # said by --show and before loading, not when the optimiser is made
        raise EmbenchError(f"--set optimizer must be one of {', '.join(OPTIMIZERS)}, got {cfg.optimizer!r}")
    if cfg.resume and cfg.overwrite:
        raise EmbenchError("--resume continues the run in --out, --overwrite removes it: give one of them")
    if cfg.lr_schedule not in ("linear", "constant"):
        raise EmbenchError(f"--set lr_schedule must be linear or constant, got {cfg.lr_schedule!r}")
    check_kbit(cfg.load_kbit, cfg.lora_r, cfg.from_scratch, cfg.precision)
    if cfg.tensorboard and importlib.util.find_spec("tensorboard") is None:  # said before the model loads, not after
        raise EmbenchError(TENSORBOARD_MISSING)
    POOLERS.canonical(cfg.pooling)
    if cfg.family:
        FAMILIES.canonical(cfg.family)
    if cfg.prompt is not None:  # a named template (bellm, bellm-code, bellm-eval, prompteol, none) becomes its text
        cfg = replace(cfg, prompt=check_prompt(cfg.prompt))
    return cfg


# option -> (lowest, highest, whether the lowest itself is allowed); None: no bound. NaN fails every test.
NUMBERS = {
    "lr": (0.0, None, False), "weight_decay": (0.0, None, True), "epochs": (0.0, None, False),
    "warmup_ratio": (0.0, 1.0, True), "grad_clip": (0.0, None, True), "dropout": (0.0, 1.0, True),
    "lora_r": (0, None, True), "lora_alpha": (0.0, None, False), "lora_dropout": (0.0, 1.0, True),
    "freeze_layers": (0, None, True), "max_steps": (1, None, True), "max_examples": (1, None, True),
    "eval_steps": (0, None, True), "save_steps": (1, None, True), "save_every": (0, None, True),
    "eval_batch_size": (1, None, True), "eval_max_length": (1, None, True),
    "export_max_length": (1, None, True), "warmup_steps": (0, None, True), "seed": (0, SEED_MAX, True),
}


def _check_numbers(values: dict[str, Any], flag_of: Callable[[str], str] = option_flag) -> None:
    """Every numeric option of ``values`` finite and in its range, named as the command line spells it (``flag_of``)."""
    for name, (low, high, low_ok) in NUMBERS.items():
        value = values.get(name)
        if value is None:
            continue
        flag = flag_of(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise EmbenchError(f"{flag} must be a finite number, got {value!r}")
        if (value < low if low_ok else value <= low) or (high is not None and value > high):
            bound = f"at least {low}" if low_ok else f"more than {low}"
            raise EmbenchError(f"{flag} must be {bound}" + (f" and at most {high}" if high is not None else "") + f", got {value}")


def check_file_values(general: dict[str, Any], own: dict[str, Any], options: type, where: str) -> None:
    """The values one config file gives (``general`` options and the method's ``own``, of dataclass ``options``),
    checked as :func:`resolve` checks them but named by the file and key (``--config a.yaml: max_steps ...``), not by
    a flag the user never gave."""
    typed(TrainConfig, general, lambda name: f"{where}: {name}")
    typed(options, own, lambda name: f"{where}: {name}")
    _check_numbers(general, lambda name: f"{where}: {name}")
    if own.get("temperature") is not None:  # the method checks it too, but names --temperature, which was not given
        check_temperature(own["temperature"], f"{where}: temperature")


KNOWN_KINDS = {"bool", "int", "float", "str", "list[str]", "dict[str, Any]", "dict"}  # others (Any, a plug-in's) pass


def typed(options: type, values: dict[str, Any], flag_of: Callable[[str], str]) -> dict[str, Any]:
    """The options of ``values`` that the dataclass ``options`` declares, each checked against its annotation and
    returned as that type, named as ``flag_of`` spells it: a config file or ``--set`` can give ``"eight"``, ``2.5``,
    ``"False"`` (a non-empty string, which counted as true) or a single name where a list is wanted (whose letters
    were read as the list)."""
    return {f.name: _typed(option_kinds(f), values[f.name], flag_of(f.name))
            for f in dataclasses.fields(options) if f.name in values}


def _typed(kinds: set[str], value: Any, flag: str) -> Any:
    if value is None:  # a None where the annotation allows none: `out:` left empty in a config file
        if "None" in kinds or not kinds & KNOWN_KINDS:
            return None
        raise EmbenchError(f"{flag} needs a value, got none (null)")
    if "bool" in kinds:
        answer = as_bool(value)
        if answer is None:
            raise EmbenchError(f"{flag} must be {YES_NO}, got {value!r}")
        return answer
    if "str" in kinds and isinstance(value, str | PathLike):
        return value if isinstance(value, str) else str(value)
    if "list[str]" in kinds:
        if isinstance(value, str | PathLike):  # one name is a list of one, as --eval-task NAME given once
            return [str(value)]
        if isinstance(value, list | tuple) and all(isinstance(v, str | PathLike) for v in value):
            return [str(v) for v in value]
        raise EmbenchError(f"{flag} must be a name or a list of names, got {value!r}")
    if kinds & {"int", "float"}:
        ok = isinstance(value, int) if "float" not in kinds else isinstance(value, int | float)
        if isinstance(value, bool) or not ok:
            raise EmbenchError(f"{flag} must be {'a number' if 'float' in kinds else 'an integer'}, got {value!r}")
        return value
    if "str" in kinds:
        raise EmbenchError(f"{flag} must be text (a name or a path), got {value!r}; in a config file, quote it")
    if kinds & {"dict[str, Any]", "dict"} and not isinstance(value, dict):
        raise EmbenchError(f"{flag} must be a mapping of name: value, got {value!r}")
    return value


def _options(method: Any, given: Any) -> Any:
    if dataclasses.is_dataclass(given) and isinstance(given, method.Options):
        return given
    raw = dataclasses.asdict(given) if dataclasses.is_dataclass(given) else dict(given or {})
    known = [f.name for f in dataclasses.fields(method.Options)]
    for name in raw:
        if name not in known:
            hint = nearest(name, known)
            did = f" Did you mean {', '.join(repr(h) for h in hint)}?" if hint else ""
            raise EmbenchError(f"method {method.__name__}: unknown option {name!r}.{did}")
    raw.update(typed(method.Options, raw, lambda name: f"--set {name}"))
    for name, value in raw.items():  # NaN passes every bound a method checks (nan <= 0 is false); inf trains nothing
        if isinstance(value, float) and not math.isfinite(value):
            raise EmbenchError(f"method {method.__name__}: option {name} must be a finite number, got {value!r}")
    return method.Options(**raw)
