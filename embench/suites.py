"""Named suites: which tasks, under which default protocol, shown how."""

from __future__ import annotations

from dataclasses import dataclass, field

from .core.registry import Registry

STS_TASKS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness")


@dataclass(frozen=True)
class Suite:
    name: str
    tasks: tuple[str, ...]
    description: str
    view: str = "summary"  # "summary": tasks as columns + Avg.; "breakdown": every subset and aggregation
    protocol: dict[str, str] = field(default_factory=dict)


SUITES: Registry[Suite] = Registry("suite")
SUITES.add(
    "sts-all",
    Suite("sts-all", STS_TASKS, "STS12-16 ('all') + STS-B test + SICK-R test; cosine, Spearman (SimCSE's protocol)"),
)
SUITES.add(
    "sts",
    Suite("sts", STS_TASKS, "the same seven STS tasks with the full breakdown: every subset, all/mean/wmean, Pearson and Spearman", view="breakdown"),
)
