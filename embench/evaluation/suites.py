"""Named suites: which tasks, under which default protocol, shown how.

Suites are declared here by task name only, so listing or resolving a suite imports no task code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.plugins import instance_of
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


SUITES: Registry[Suite] = Registry("suite", plugins="embench.suites",
                                  expects=instance_of("embench.evaluation.suites:Suite", "an embench.evaluation.suites.Suite"))
for _suite in (
    Suite(name="sts-all", tasks=STS_TASKS,
          description="STS12-16 ('all') + STS-B test + SICK-R test; cosine, Spearman (SimCSE's protocol)"),
    Suite(name="sts", tasks=STS_TASKS, view="breakdown",
          description="the same seven STS tasks with the full breakdown: every subset, all/mean/wmean, Pearson and Spearman"),
    Suite(name="transfer", tasks=TRANSFER_SEVEN,
          description="SentEval transfer: MR CR SUBJ MPQA SST TREC MRPC, logistic regression, test accuracy"),
    Suite(name="senteval", tasks=STS_TASKS + TRANSFER_SEVEN,
          description="SimCSE's full table: sts-all (7 STS tasks) + the 7 SentEval transfer tasks"),
    Suite(name="mteb-lite", tasks=tuple(MTEB_PREFIX + n for n in MTEB_LITE),
          description="12 MTEB tasks (STS12-16, STS-B, SICK-R, Banking77, Emotion, 20NG clustering, SciFact, TwitterURL) "
                      "through mteb's own evaluators, on the data root"),
):
    SUITES.add(_suite.name, _suite)
