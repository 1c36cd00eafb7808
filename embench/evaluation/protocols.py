"""The protocol axes: one list of choices (``CHOICES``) and one typed object (:class:`EvalProtocol`).

Every result is stored with the protocol that produced it, and two results whose protocols differ
never overwrite each other. Definitions follow ``docs/PROTOCOLS.md`` of the project's shared notes:

* ``aggregation`` (STS12-16): ``all`` = one correlation over the concatenated subsets (SimCSE,
  SBERT, MTEB); ``mean`` = plain average of per-subset correlations (SentEval, InferSent);
  ``wmean`` = average weighted by the number of scored pairs (BERT-flow, BERT-whitening).
* ``correlation``: ``spearman`` or ``pearson``.
* ``text``: ``senteval`` (SentEval's Moses-tokenised, lower-cased files, tokens re-joined by one
  space as SentEval's batchers do) or ``raw`` (the original releases, as MTEB feeds them).
* ``sick_split``: ``test`` (4,927 pairs, SentEval/SimCSE) or ``full`` (all 9,927 pairs, MTEB).
* ``stsb_split``: the STS-B split scored, ``test`` (as papers report), ``dev`` or ``train``.
* ``similarity``: ``cosine`` or ``dot``.
* ``scoring`` (STS-B, SICK-R): ``cosine`` (SimCSE, MTEB) or ``regressor`` (SentEval's original:
  a small regressor trained on the frozen embeddings of the train split, selected on dev).
* ``classifier``: SentEval's logistic-regression configuration, ``default`` (kfold 10, adam,
  batch 64, tenacity 5, epoch size 4) or ``prototyping`` (kfold 5, rmsprop, batch 128,
  tenacity 3, epoch size 2).
* ``pair_features`` (MRPC, SICK-E): ``senteval-code`` = ``[|u - v|, u * v]`` (the default: what
  SentEval's released ``mrpc.py`` and ``sick.py`` compute, hence what every paper run through SentEval
  reports) or ``uv`` = ``[u, v, |u - v|, u * v]`` (PROTOCOLS.md, InferSent's classifier input).
* ``seed``: for every task that samples or trains.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, NamedTuple

from ..core.arguments import is_seed
from ..core.boundary import python_api
from ..core.defaults import SEED_MAX
from ..core.errors import EmbenchError


class Choice(NamedTuple):
    """One protocol axis: its values (the first is the default) and the help the CLI shows for it."""

    values: tuple[str, ...]
    help: str


# The one list of protocol choices: EvalProtocol validates against it, the CLI generates its options
# from it (embench.cli.options) and the audit its knobs (embench.audit.knobs).
CHOICES: dict[str, Choice] = {
    "aggregation": Choice(("all", "mean", "wmean"), "STS12-16: all (one correlation over all subsets), mean, wmean."),
    "correlation": Choice(("spearman", "pearson"), "Correlation reported as the main score."),
    "text": Choice(("senteval", "raw"), "senteval (tokenised, lower-cased) or raw (original releases)."),
    "sick_split": Choice(("test", "full"), "SICK-R: test (4,927 pairs) or full (9,927, as MTEB)."),
    "stsb_split": Choice(("test", "dev", "train"), "STS-B: the split scored (test, as SentEval and SimCSE report)."),
    "similarity": Choice(("cosine", "dot"), "Similarity of two embeddings."),
    "classifier": Choice(("default", "prototyping"), "Transfer tasks: SentEval classifier config."),
    "scoring": Choice(("cosine", "regressor"), "STS-B/SICK-R: cosine, or SentEval's trained regressor."),
    "pair_features": Choice(
        ("senteval-code", "uv"),
        "MRPC/SICK-E classifier input: senteval-code = (|u-v|, u*v) (default: what SentEval's code, hence every "
        "published transfer table, computes), uv = (u, v, |u-v|, u*v).",
    ),
}


@dataclass(frozen=True)
class EvalProtocol:
    """How a task is scored. Defaults are SimCSE's: cosine, Spearman, ``all``, SentEval text."""

    aggregation: str = "all"
    correlation: str = "spearman"
    text: str = "senteval"
    sick_split: str = "test"
    stsb_split: str = "test"
    similarity: str = "cosine"
    scoring: str = "cosine"  # STS-B and SICK-R: cosine against gold, or SentEval's trained regressor
    classifier: str = "default"  # SentEval classifier config: default ("test" in SimCSE) or prototyping ("fasttest")
    pair_features: str = "senteval-code"  # MRPC/SICK-E classifier input: SentEval code's [|u-v|,u*v], or [u,v,|u-v|,u*v]
    seed: int = 1111  # SentEval's default seed; used by every task that samples or trains

    @python_api("EvalProtocol")  # EvalProtocol(sick_split="x") from Python says sick_split=, not --sick-split
    def __post_init__(self) -> None:
        for name, choice in CHOICES.items():
            value = getattr(self, name)
            if value not in choice.values:
                raise EmbenchError(
                    f"invalid value {value!r} for option --{name.replace('_', '-')}; "
                    f"choose one of: {', '.join(choice.values)}"
                )
        if not is_seed(self.seed):
            raise EmbenchError(f"invalid value {self.seed!r} for option --seed; give a whole number from 0 to {SEED_MAX}")
        if self.scoring == "regressor" and (self.sick_split == "full" or self.stsb_split != "test"):
            raise EmbenchError(
                "--scoring regressor trains on the train split and selects on dev, so it needs "
                "--sick-split test and --stsb-split test"
            )

    @classmethod
    def from_options(cls, **options: Any) -> EvalProtocol:
        """Build from keyword options, ignoring ``None`` values; unknown names are an error."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(k for k in options if k not in names)
        if unknown:
            raise EmbenchError(f"unknown protocol option(s): {', '.join(unknown)}; known: {', '.join(sorted(names))}")
        return cls(**{k: v for k, v in options.items() if v is not None})

    def to_dict(self) -> dict[str, str | int]:
        return asdict(self)
