"""An MTEB task's table column never takes the column of another task: one of embench's own (``MTEB:STS16`` beside
SentEval's ``STS16``, with its ``*`` where its data differ, as the README promises), a task file or a plug-in task
registered under its mteb name, nor, in a table of stored records, a task file's column that an MTEB record stored
before the task file existed still names."""

from __future__ import annotations

import pytest

from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.results import Record
from embench.tasks import TASKS
from embench.tasks.mteb.tasks import MTEBTask
from embench.tasks.task_file import register_task_files

pytestmark = pytest.mark.usefixtures("task_registry_restored")  # conftest.py


def test_an_mteb_task_named_like_one_of_embench_s_own_keeps_its_prefix_and_its_data_star():
    differing = MTEBTask("STS16")
    differing._differs = True  # as prepare() sets it when the local copy is not MTEB's (the run said STS16*)
    assert differing.display == "MTEB:STS16*"
    assert MTEBTask("SICK-R").display == "MTEB:SICK-R"
    assert MTEBTask("STSBenchmark").display == "STSBenchmark"  # SentEval's column is STS-B: no clash
    assert MTEBTask("TwitterURLCorpus").display == "TwitterURLCorpus*"


def test_a_task_file_named_or_shown_as_an_mteb_task_leaves_the_mteb_task_its_prefixed_column(tmp_path):
    (tmp_path / "b.tsv").write_text("text\tlabel\n" + "".join(f"t{i}\t{i % 2}\n" for i in range(6)))
    assert MTEBTask("Banking77Classification").display == "Banking77Classification"
    (tmp_path / "b77.yaml").write_text("name: Banking77Classification\nkind: classification\nfiles: b.tsv\n")
    register_task_files([tmp_path / "b77.yaml"])
    assert TASKS.get("Banking77Classification").display == "Banking77Classification"
    assert MTEBTask("Banking77Classification").display == "MTEB:Banking77Classification"
    (tmp_path / "emo.yaml").write_text("name: my-emotions\ndisplay: EmotionClassification\nkind: classification\n"
                                       "files: b.tsv\n")
    register_task_files([tmp_path / "emo.yaml"])
    assert MTEBTask("EmotionClassification").display == "MTEB:EmotionClassification"


def _record(task: str, display: str, kind: str, score: float) -> Record:
    return Record(task=task, display=display, kind=kind, model="m", main_score=score, scores={},
                  protocol=EvalProtocol().to_dict(), encoder={"fingerprint": "f1", "pooling": "mean"})


def test_stored_records_of_an_mteb_task_and_a_task_file_of_its_name_keep_a_column_each():
    """An MTEB record stored before the task file was registered names the bare mteb name: the run's table and
    `results show` kept one column (65.71) and showed the task file's score there (1.30)."""
    from embench.cli.commands.results import results_frame
    from embench.report.tables import summary_frame

    records = [_record("MTEB:Banking77Classification", "Banking77Classification", "mteb", 0.6571),
               _record("Banking77Classification", "Banking77Classification", "transfer", 0.013),
               _record("MTEB:TwitterURLCorpus", "TwitterURLCorpus*", "mteb", 0.5)]
    frame = summary_frame(records)
    assert list(frame.columns) == ["MTEB:Banking77Classification", "Banking77Classification", "TwitterURLCorpus*", "Avg."]
    assert frame.loc["m", "MTEB:Banking77Classification"] == 0.6571 and frame.loc["m", "Banking77Classification"] == 0.013
    shown, _, _ = results_frame(records)
    assert shown.loc[0, "MTEB:Banking77Classification"] == 0.6571 and shown.loc[0, "Banking77Classification"] == 0.013


def test_one_mteb_task_stored_under_both_displays_is_one_column():
    """A record stored with the bare name (before a task file of that name was registered) and one stored with the
    prefix made two columns of one task, and each model's Avg. empty."""
    from embench.report.tables import summary_frame

    a = _record("MTEB:Banking77Classification", "Banking77Classification", "mteb", 0.6571)
    b = _record("MTEB:Banking77Classification", "MTEB:Banking77Classification", "mteb", 0.70)
    b.model = "m2"
    other, other2 = (_record("MTEB:TwitterURLCorpus", "TwitterURLCorpus*", "mteb", v) for v in (0.5, 0.4))
    other2.model = "m2"
    frame = summary_frame([a, b, other, other2])
    assert list(frame.columns) == ["MTEB:Banking77Classification", "TwitterURLCorpus*", "Avg."]
    assert frame["Avg."].notna().all()
