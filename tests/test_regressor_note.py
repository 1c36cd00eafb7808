"""`run --scoring regressor` says which STS tasks were scored by similarity (no train split): asked of the run's own
option, as their records name the scoring at its default (an axis they are not scored under). Asked of the records,
the note never named STS12-16, and named no task file of test pairs once its record left the scoring out too."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from embench.cli.commands.run import by_similarity
from embench.evaluation.protocols import EvalProtocol
from embench.tasks import TASKS
from embench.tasks.recorded_protocol import task_protocol


def record(task: str, meta: dict) -> SimpleNamespace:
    protocol = task_protocol(TASKS.get(task), EvalProtocol(scoring="regressor")).to_dict()  # as the record names it
    return SimpleNamespace(display=task, kind="sts", protocol=protocol, provenance={"task_meta": meta})


@pytest.mark.slow  # the CLI command module and the task registry imported
def test_the_note_names_the_sts_tasks_no_regressor_scored_when_the_run_asked_for_it():
    records = [record("STS12", {}), record("STSBenchmark", {"scoring": "regressor"}),
               SimpleNamespace(display="MR", kind="transfer", protocol={}, provenance={})]
    assert records[0].protocol["scoring"] == "cosine"
    assert by_similarity(records, "regressor") == ["STS12"]
    assert by_similarity(records, None) == by_similarity(records, "cosine") == []
