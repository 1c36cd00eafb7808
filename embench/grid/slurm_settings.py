"""The settings of a Slurm job array, and the one reading of ``--slurm-option key=value`` that ``embench grid`` and
``embench train`` share: this class's fields by name (``timeout_min=30``, ``mem_gb=16``, ``partition=gpu``: submitit
turns them into sbatch's ``--time=30``, ``--mem=16GB``, ``--partition=gpu``), any other key an sbatch option as it
is (``account=abc`` -> ``--account=abc``; ``--account=abc`` is read the same). Every number is checked here, naming
the option it came from: sbatch takes ``--time=-5`` as no limit at all, and ``--mem=0`` as the whole node.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import EmbenchError

# each setting's name in submitit's AutoExecutor and in its SlurmExecutor
AUTO_NAMES = {"timeout": "timeout_min", "parallelism": "slurm_array_parallelism", "name": "name", "partition": "slurm_partition",
              "gpus": "gpus_per_node", "cpus": "cpus_per_task", "mem": "mem_gb", "extra": "slurm_additional_parameters"}
SLURM_NAMES = {"timeout": "time", "parallelism": "array_parallelism", "name": "job_name", "partition": "partition",
               "gpus": "gpus_per_node", "cpus": "cpus_per_task", "mem": "mem", "extra": "additional_parameters"}

# the settings a key=value may set, and what each takes
KINDS = {"partition": str, "gpus_per_job": int, "cpus_per_job": int, "array_parallelism": int, "timeout_min": int,
         "mem_gb": float}
# each number's least value, and its unit
LEAST = {"timeout_min": (1, "minutes"), "array_parallelism": (1, "tasks at once"), "cpus_per_job": (1, "CPUs"),
         "gpus_per_job": (0, "GPUs"), "mem_gb": (0.001, "GB")}
# sbatch's own names of those settings: passed on as they are, they would silently replace what the settings write
SBATCH_NAMES = {"time": "timeout_min", "cpus_per_task": "cpus_per_job", "gpus_per_node": "gpus_per_job", "mem": "mem_gb",
                "array": "array_parallelism"}


def check_setting(name: str, value: Any, said: str) -> None:
    """A number below its least (or not finite) is refused, naming it as the user gave it (``said``)."""
    if name not in LEAST or value is None:
        return
    least, unit = LEAST[name]
    if not (math.isfinite(value) and value >= least):
        raise EmbenchError(f"{said}: must be at least {least} ({unit})")


def mem_text(mem_gb: float) -> str:
    """sbatch's --mem as submitit writes it (whole GB, else MB)."""
    return f"{int(mem_gb)}GB" if mem_gb == int(mem_gb) else f"{int(mem_gb * 1024)}MB"


@dataclass
class SlurmSettings:
    partition: str | None = None
    gpus_per_job: int = 0
    cpus_per_job: int | None = None
    array_parallelism: int = 64
    timeout_min: int = 240
    mem_gb: float | None = None
    extra: dict[str, str] = field(default_factory=dict)  # any other sbatch option, e.g. {"account": "x"}
    name: str = "embench-grid"

    def __post_init__(self) -> None:
        for name in LEAST:  # settings made in Python are checked too (the CLI's are named as given, before)
            check_setting(name, getattr(self, name), f"SlurmSettings({name}={getattr(self, name)!r})")

    def parameters(self, executor: str = "auto") -> dict[str, Any]:
        """submitit's parameters: AutoExecutor's names (its ``slurm_`` ones are dropped by the local executors),
        or with ``executor="slurm"`` SlurmExecutor's, into which AutoExecutor translates them (the dry run's)."""
        names = SLURM_NAMES if executor == "slurm" else AUTO_NAMES
        given = {"timeout": self.timeout_min, "parallelism": self.array_parallelism, "name": self.name,
                 "partition": self.partition, "gpus": self.gpus_per_job or None, "cpus": self.cpus_per_job,
                 "mem": (mem_text(self.mem_gb) if executor == "slurm" else self.mem_gb) if self.mem_gb else None,
                 "extra": dict(self.extra) or None}
        return {names[k]: v for k, v in given.items() if v is not None}

    @classmethod
    def from_options(cls, items: Sequence[str] | None, flags: dict[str, tuple[str, Any]] | None = None) -> SlurmSettings:
        """Settings from ``key=value`` strings (``--slurm-option``): this class's fields by name (``timeout_min=30``,
        ``partition=gpu``, ``gpus_per_job=1``, dashes allowed), any other key an sbatch option (``account=abc``).
        ``flags``: settings given by options of their own (grid's ``--timeout-min``), name -> (as the user wrote it,
        value); an item setting one of them as well is refused."""
        values: dict[str, Any] = {}
        said: dict[str, str] = {}
        for name, (spelled, value) in (flags or {}).items():
            values[name], said[name] = value, spelled
        extra: dict[str, str] = {}
        for key, raw in parse_options(items).items():
            name, given = key.replace("-", "_"), f"--slurm-option {key}={raw}"
            if name in SBATCH_NAMES:
                raise EmbenchError(f"{given}: embench writes sbatch's --{key.replace('_', '-')} from "
                                   f"{SBATCH_NAMES[name]}; give --slurm-option {SBATCH_NAMES[name]}=... instead")
            if name not in KINDS:
                extra[key] = raw
                continue
            if name in said:
                raise EmbenchError(f"{given}: {name} is also given as {said[name]}; give it once")
            try:
                values[name] = KINDS[name](raw)
            except ValueError:
                whole = "a whole number" if KINDS[name] is int else "a number"
                raise EmbenchError(f"{given}: {name} takes {whole}") from None
            said[name] = given
        for name, value in values.items():
            check_setting(name, value, said[name])
        return cls(**values, extra=extra)


def parse_options(items: Sequence[str] | None) -> dict[str, str]:
    """``["account=abc", "qos=high"]`` -> ``{"account": "abc", "qos": "high"}``; a key may keep sbatch's leading
    dashes (``--account=abc``); a malformed or repeated item is named."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, val = item.partition("=")
        key = key.strip().lstrip("-")  # kept, "--account" would reach sbatch as ----account
        if not sep or not key:
            raise EmbenchError(f"--slurm-option {item!r}: expected key=value, e.g. account=abc")
        if key in out:
            raise EmbenchError(f"--slurm-option {key} is given twice ({key}={out[key]}, {key}={val.strip()}); give it once")
        out[key] = val.strip()
    return out
