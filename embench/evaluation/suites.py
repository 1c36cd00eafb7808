"""Named suites: which tasks, under which default protocol, shown how.

Suites are declared here by task name only, so listing or resolving a suite imports no task code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.registry import Registry

STS_TASKS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness")
TRANSFER_SEVEN = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")
MTEB_PREFIX = "MTEB:"  # embench's name of an mteb task: MTEB:<mteb name>, apart from embench's own tasks
MTEB_LITE = (
    "STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICK-R",
    "Banking77Classification", "EmotionClassification", "TwentyNewsgroupsClustering", "SciFact", "TwitterURLCorpus",
)


@dataclass(frozen=True)
class Suite:
    name: str
    tasks: tuple[str, ...]
    description: str
    view: str = "summary"  # "summary": tasks as columns + Avg.; "breakdown": every subset and aggregation
    protocol: dict[str, str] = field(default_factory=dict)


SUITES: Registry[Suite] = Registry("suite")
for _suite in (
    Suite("sts-all", STS_TASKS, "STS12-16 ('all') + STS-B test + SICK-R test; cosine, Spearman (SimCSE's protocol)"),
    Suite("sts", STS_TASKS, "the same seven STS tasks with the full breakdown: every subset, all/mean/wmean, Pearson and Spearman",
          view="breakdown"),
    Suite("transfer", TRANSFER_SEVEN, "SentEval transfer: MR CR SUBJ MPQA SST TREC MRPC, logistic regression, test accuracy"),
    Suite("senteval", STS_TASKS + TRANSFER_SEVEN, "SimCSE's full table: sts-all (7 STS tasks) + the 7 SentEval transfer tasks"),
    Suite("mteb-lite", tuple(MTEB_PREFIX + n for n in MTEB_LITE),
          "12 MTEB tasks (STS12-16, STS-B, SICK-R, Banking77, Emotion, 20NG clustering, SciFact, TwitterURL) "
          "through mteb's own evaluators, on the data root"),
):
    SUITES.add(_suite.name, _suite)
