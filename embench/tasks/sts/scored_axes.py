"""The protocol axes a built-in STS dataset's score depends on, and the protocol its record names.

A SemEval year (STS12-16) is scored by similarity over its subsets: no split to choose, no regressor (asked for, it
falls back to similarity and says so). STS-B and SICK-R have one part to score: no subsets to aggregate, and only
their own split option. Neither reads the transfer axes, nor the seed unless the regressor trains. Every axis a
dataset ignores is recorded at its default (``recorded_protocol.with_defaults``), so ``--sick-split full`` no longer
keys a second record of STS13 (a rescoring of the same number, which `report` then refused as a mix of protocols) nor
a second MTEB revision.
"""

from __future__ import annotations

from ...evaluation.protocols import EvalProtocol
from ..recorded_protocol import with_defaults

SPLIT_OPTIONS = ("stsb_split", "sick_split")
SCORED = ("aggregation", "correlation", "text", "similarity", "scoring", *SPLIT_OPTIONS)  # the STS axes


def ignored_axes(split_option: str | None) -> set[str]:
    """The STS axes a dataset with this split option (None: a SemEval year's subsets) is not scored under."""
    if split_option is None:
        return {*SPLIT_OPTIONS, "scoring"}
    return {"aggregation", *(set(SPLIT_OPTIONS) - {split_option})}


def recorded_sts_protocol(protocol: EvalProtocol, split_option: str | None) -> EvalProtocol:
    """``protocol`` with every axis the dataset ignores at its default (the seed kept for the regressor alone)."""
    kept = set(SCORED) - ignored_axes(split_option)
    if split_option is not None and protocol.scoring == "regressor":
        kept.add("seed")
    return with_defaults(protocol, kept)
