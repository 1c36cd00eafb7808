"""The settings of each side of ``compare``: one checkpoint against itself (CLS against mean pooling, layer 6 against
layer 12, a prompt against none) is the commonest question a paired test answers.

Options given to ``compare`` apply to both sides alike; ``options_a`` / ``options_b`` (the command line's ``--set-a``
/ ``--set-b KEY=VALUE``) set one side alone and win over a shared option of the same key. The keys are
:func:`~embench.models.loader.load_model`'s settings that change the vectors, plus the vector axes ``truncate_dim``
and ``quantize``; the run settings (device, batches, compilation) and the protocol stay shared, since a paired test
needs one protocol and those do not change what is measured. Each side is evaluated as ``evaluate`` (and ``embench
run``) would with its settings, so its records are stored and reused under the same keys.

The table names each side by its model and the settings that tell the two apart ("all-MiniLM-L6-v2 (pooling=cls)"),
read from the records, so a default resolved by the loader (mean, for MiniLM) is named too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.errors import EmbenchError, UnknownNameError
from ..core.identity_fields import ENCODER_FIELDS, OPTIONAL_FIELDS, comparable, shown
from ..core.registry import nearest
from ..models.poolers import POOLERS
from .protocols import CHOICES

# what load_model reads from a name or folder (an encoder object has its own, fixed when it was loaded)
LOAD_KEYS = ("pooling", "layer", "max_length", "dtype", "normalize", "prompt", "prompt_name", "bidirectional_last",
             "bidirectional_mode", "adapter", "revision", "family")
VECTOR_KEYS = ("truncate_dim", "quantize")  # applied to any encoder's vectors (encoding/vector_axes.py)
SIDE_KEYS = LOAD_KEYS + VECTOR_KEYS
# a side's row name already says these ("X (dim 64, int8)"); the fingerprint names weights, not a setting
_NOT_LABELS = ("fingerprint", *VECTOR_KEYS)
LABEL_FIELDS = tuple(f for f in (*ENCODER_FIELDS, *OPTIONAL_FIELDS) if f not in _NOT_LABELS)
# the run's settings, not a model's: they change no score (device, batches) or must be one for a paired test (protocol)
RUN_KEYS = ("device", "batch_size", "batch_tokens", "compile", "compile_model", "cuda_graphs", "unpadded", "seed", *CHOICES)


def side_key(key: str, where: str) -> str:
    """``key`` as the parameter it names (``max-length`` is ``max_length``), or an error naming the nearest setting."""
    name = str(key).strip().replace("-", "_")
    if name in SIDE_KEYS:
        return name
    if name in RUN_KEYS:  # no typo: say why it is not a side's
        raise EmbenchError(f"{where}: {name} is one setting for both sides (a paired test needs one protocol, and the "
                           f"device and batches change no score); give it once, for both")
    if not name:
        raise EmbenchError(f"{where}: an empty setting name; the settings: {', '.join(SIDE_KEYS)}")
    error = UnknownNameError("model setting", name, list(SIDE_KEYS), nearest(name, list(SIDE_KEYS), n=1))
    error.args = (f"{where}: {error.args[0]}",)  # which side's, as every error here says
    raise error


def side_options(shared: Mapping[str, Any], own: Mapping[str, Any] | None, where: str, model: Any) -> dict[str, Any]:
    """One side's keyword arguments for ``evaluate``: the shared ones, then the side's own (which win)."""
    if own is not None and not isinstance(own, Mapping):
        raise EmbenchError(f"{where}: a dict of settings, such as {{'pooling': 'cls'}} (got {type(own).__name__})")
    mine = {side_key(k, where): v for k, v in (own or {}).items()}
    if len(mine) < len(own or {}):  # max-length and max_length: which one was meant is no guess
        raise EmbenchError(f"{where}: a setting given twice (spelt with - and with _): {sorted(own or {})}")
    loaded = sorted(k for k in mine if k in LOAD_KEYS and mine[k] is not None)
    if loaded and not isinstance(model, (str, Path)):  # as_encoder would refuse them only after the other side's run
        raise EmbenchError(f"{where}: {', '.join(loaded)}: how a model is loaded, and this side is an encoder loaded "
                           f"already; give the model by name, or load it so (load_model(name, {loaded[0]}=...))")
    return {**shared, **{k: v for k, v in mine.items() if v is not None}}


def two_sides(models: Sequence[Any], shared: Mapping[str, Any],
              own: Sequence[Mapping[str, Any] | None]) -> tuple[list[dict[str, Any]], list[str]]:
    """Python's ``compare``: each side's ``evaluate`` arguments, and the keys a side was given alone; A and B one model
    with one set of settings refused, before either loads."""
    # numpy, imported here: this module is on the command line's start (cli/side_options.py)
    from ..encoding.vector_axes import one_axis

    sides = [side_options(shared, o, f"options_{s}", m) for s, o, m in zip("ab", own, models, strict=True)]
    for side in sides:  # a paired test: one configuration of each model
        one_axis(side.get("truncate_dim"), side.get("quantize"))
        if isinstance(side.get("pooling"), str):  # a typo in B's pooler said before A's whole run, not after it
            POOLERS.canonical(side["pooling"])
    check_two_sides(models, sides, ("model_a, model_b", "options_b={'pooling': 'cls'}"))
    return sides, [side_key(k, "") for o in own for k in (o or {})]


def _settings(options: Mapping[str, Any]) -> dict[str, Any]:
    return {k: comparable(options[k]) for k in SIDE_KEYS if options.get(k) not in (None, [], ())}


def check_two_sides(models: Sequence[Any], options: Sequence[Mapping[str, Any]], names: Sequence[str]) -> None:
    """Refuse one model asked twice with one set of settings (before either loads): every difference would be 0.
    ``names``: how the caller gives the two models and a side's own settings (``--model``, ``--set-b``)."""
    a, b = models
    same = a is b or (isinstance(a, (str, Path)) and isinstance(b, (str, Path)) and _where(a) == _where(b))
    if same and _settings(options[0]) == _settings(options[1]):
        model, settings = names
        raise EmbenchError(f"{model}: both sides are {a} with the same settings, so every difference is 0 by construction; "
                           f"give one side settings of its own, e.g. {settings}")


def _where(model: str | Path) -> str:
    """A folder by its resolved path (``./tiny`` and ``tiny`` are one); a hub name as written."""
    path = Path(model).expanduser()
    return str(path.resolve()) if path.exists() else str(model)


def check_distinct_records(records_a: Sequence[Any], records_b: Sequence[Any]) -> None:
    """After evaluation: two names (an alias and its folder) or two spellings of a default that resolve to the same
    weights and settings give the same records, hence a difference of 0 by construction; refuse that too. An object
    without a fingerprint is left alone: its records' keys cannot tell two such objects apart."""
    if records_a and len(records_a) == len(records_b) and all(
            a.key == b.key and a.encoder.get("fingerprint") is not None for a, b in zip(records_a, records_b, strict=True)):
        raise EmbenchError(f"A ({records_a[0].model}) and B ({records_b[0].model}) resolve to the same weights and "
                           "settings: their records are the same, so every difference is 0 by construction; give one side "
                           "settings of its own (embench compare: --set-b KEY=VALUE; Python: options_b={KEY: VALUE})")


def named_sides(evaluations: Sequence[Any], groups: Sequence[Any], given: Sequence[str]) -> tuple[str, str]:
    """The two sides' names (a seed group's (``groups``: a SeedGroup or None per side) as run's rows name it, the
    shortest ending of its folder that the other's lacks; else its model's) with their telling settings
    (:func:`side_names`); two single models whose records are the same refused (:func:`check_distinct_records`)."""
    from .seed_groups import short_names

    if not any(groups):
        check_distinct_records(evaluations[0].records, evaluations[1].records)
    short = short_names(list(dict.fromkeys(g.key for g in groups if g is not None)))  # runs/bert/simcse: bert/simcse
    return side_names([short[g.key] if g is not None else ev.records[0].model for g, ev in zip(groups, evaluations, strict=True)],
                      [ev.records[0].encoder for ev in evaluations], given)


def side_names(names: Sequence[str], encoders: Sequence[Mapping[str, Any]], given: Sequence[str] = ()) -> tuple[str, str]:
    """Each side's name with the settings that tell the two apart: every differing one when the two names are one
    model, else those a side was given alone (``given``). The values are the records' (the loader's defaults
    resolved: ``pooling=mean`` against ``pooling=cls``); the fingerprint only when nothing else tells them apart."""
    a, b = encoders
    fields = [f for f in LABEL_FIELDS if (names[0] == names[1] or f in given) and comparable(a.get(f)) != comparable(b.get(f))]
    if not fields and names[0] == names[1] and a.get("fingerprint") != b.get("fingerprint"):
        fields = ["fingerprint"]
    if not fields:
        return names[0], names[1]
    return tuple(f"{n} ({', '.join(f'{f}={shown(f, e.get(f))}' for f in fields)})"  # type: ignore[return-value]
                 for n, e in zip(names, encoders, strict=True))


def described(options: Mapping[str, Any]) -> str:
    """A side's own settings as the command line says them before anything loads: ``pooling=cls, layer=6``."""
    return ", ".join(f"{k}={v[0] if isinstance(v, list) and len(v) == 1 else v}" for k, v in options.items() if v is not None)
