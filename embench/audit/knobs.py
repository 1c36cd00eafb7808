"""The audit's knobs: the protocol axes it varies (values from the one list of protocol choices,
:data:`embench.evaluation.protocols.CHOICES`) and the encoder settings, and the variants it runs.

The knobs are those of ``docs/PROTOCOLS.md``. Each knob's first value is the baseline (SimCSE's
protocol: ``all``, Spearman, SentEval text, SICK-R test, cosine, the model's own pooling, fp32,
batch 128, the model's maximum length).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from ..core.errors import EmbenchError, UnknownNameError
from ..core.registry import nearest
from ..evaluation.protocols import CHOICES

BASELINE_BATCH = 128
PROTOCOL_KNOBS = ("aggregation", "correlation", "text", "sick_split", "scoring", "similarity")
MODEL_KNOB_VALUES: dict[str, list[Any]] = {  # None: the model's own setting
    # both first-last variants (SimCSE's layer 1 + last; BERT-whitening's embedding output + last) and
    # [CLS] without the pooler head (SimCSE's unsupervised evaluation), as PROTOCOLS.md lists them
    "pooling": [None, "cls", "mean", "first_last_avg", "embed_last_avg", "cls_before_pooler"],
    "dtype": ["fp32", "bf16"],
    "batch_size": [BASELINE_BATCH, 1, 64, 512],
    "max_length": [None, 32],
    # the vectors' length and precision: their values depend on the model's dimension and --truncate-dim /
    # --quantize, so the audit adds their variants itself (audit/dimensions.py), after the vectors are encoded
    "truncate_dim": [None],
    "quantize": [None],
}
KNOBS: dict[str, list[Any]] = {**{k: list(CHOICES[k].values) for k in PROTOCOL_KNOBS}, **MODEL_KNOB_VALUES}
MODEL_KNOBS = ("pooling", "dtype", "max_length", "truncate_dim", "quantize")
MATCH_GRID = ("aggregation", "correlation", "text", "sick_split", "similarity", "scoring")


@dataclass
class Variant:
    label: str
    knobs: dict[str, Any]  # the knob values that differ from the baseline

    def protocol(self) -> dict[str, Any]:
        return {k: v for k, v in self.knobs.items() if k in PROTOCOL_KNOBS}

    def model_options(self) -> dict[str, Any]:
        return {k: v for k, v in self.knobs.items() if k in MODEL_KNOBS and v is not None}


def variants(knobs: list[str], config: Any = None, bidirectional: bool = False) -> list[Variant]:
    """The baseline, the aggregation x correlation grid, then one knob at a time; with the model's ``config``, only the
    poolings that read its text (:func:`reads_the_text`: a decoder's first token sees none of it), every pooling where
    the last layers see both ways (``bidirectional``, BeLLM's)."""
    out = [Variant("baseline", {})]
    if "aggregation" in knobs or "correlation" in knobs:
        aggs = KNOBS["aggregation"] if "aggregation" in knobs else ["all"]
        corrs = KNOBS["correlation"] if "correlation" in knobs else ["spearman"]
        for agg, corr in itertools.product(aggs, corrs):
            if (agg, corr) == ("all", "spearman"):
                continue
            diff = {k: v for k, v in (("aggregation", agg), ("correlation", corr)) if v != KNOBS[k][0]}
            out.append(Variant(", ".join(f"{k}={v}" for k, v in diff.items()), diff))
    for knob in knobs:
        if knob in ("aggregation", "correlation"):
            continue
        if knob not in KNOBS:
            raise UnknownNameError("audit knob", knob, list(KNOBS), nearest(knob, list(KNOBS)))
        for value in KNOBS[knob][1:]:
            if knob != "pooling" or bidirectional or reads_the_text(value, config):
                out.append(Variant(f"{knob}={value}", {knob: value}))
    return out


def reads_the_text(pooling: str, config: Any) -> bool:
    """Whether ``pooling`` sees the text of a model with this ``config``: in a causal (decoder) model the first token
    sees nothing of it, so cls and cls_before_pooler give every text one vector and an undefined score. The rule
    training follows (Family.training_pooling takes the family's pooler instead), so such a variant is left out."""
    from ..models.families import detect

    return config is None or detect(config).training_pooling(pooling) == pooling


def knob_name(raw: str) -> str:
    """A knob as its option is spelled (``sick-split``) or as a Python name (``sick_split``); a typo gets the nearest."""
    name = raw.strip().replace("-", "_")
    if name not in KNOBS:
        hint = nearest(name, list(KNOBS), n=1)
        raise EmbenchError(f"--knobs: unknown knob {raw.strip()!r}" + (f"; did you mean {hint[0].replace('_', '-')!r}?" if hint else "")
                           + f" (knobs: {', '.join(k.replace('_', '-') for k in KNOBS)})")
    return name
