"""A task file given to ``evaluate(task_files=...)`` registers its task for that call only, as a fresh process would
see it; one the command line (or a caller) registered before stays registered."""

from __future__ import annotations

import numpy as np
import pytest

import embench
from embench.core.errors import EmbenchError
from embench.tasks import TASKS
from embench.tasks.task_file import REGISTERED, register_task_files

pytestmark = pytest.mark.usefixtures("task_registry_restored")  # conftest.py: even a failing test leaves none behind


class Random:
    fingerprint = "random-vectors"

    def encode(self, texts, **kw):
        return np.random.default_rng(len(texts)).standard_normal((len(texts), 8)).astype(np.float32)


def task_file(folder, name="my-sts"):
    rows = "".join(f"a cat sat {i}\tthe dog ran {i}\t{i % 5}.{i % 3}\n" for i in range(12))
    (folder / "pairs.tsv").write_text("s1\ts2\tscore\n" + rows, encoding="utf-8")
    (folder / "task.yaml").write_text(f"name: {name}\nkind: pairs\nfiles:\n  test: pairs.tsv\ncolumns:\n  sentence1: s1\n"
                                      "  sentence2: s2\nscore_range: [0, 5]\n", encoding="utf-8")
    return folder / "task.yaml"


@pytest.mark.slow
def test_a_task_file_s_task_is_registered_only_while_its_evaluate_runs(data_root, tmp_path):
    """evaluate(task_files=[f]) left f's task registered for the rest of the process: a later evaluate(tasks=[its
    name]) with no file ran it, where a fresh process said the name is unknown."""
    seen = []
    kw = dict(data=data_root, results_dir=tmp_path / "r", use_cache=False, progress=False)
    ev = embench.evaluate(Random(), task_files=[task_file(tmp_path)], **kw,
                          on_task=lambda name, status, record: seen.append(TASKS.get(name).kind))
    assert [r.task for r in ev.records] == ["my-sts"] and seen == ["sts"]  # registered during the call
    assert "my-sts" not in TASKS and "my-sts" not in REGISTERED and "my-sts" not in TASKS.names()
    assert ev.frame.shape[0] == 1 and "my-sts" in ev.render("table")  # its results still show
    with pytest.raises(EmbenchError, match="my-sts"):
        embench.evaluate(Random(), tasks=["my-sts"], **kw)
    again = embench.evaluate(Random(), task_files=[task_file(tmp_path)], **kw)  # the file given again: its record
    assert list(again.status.values()) == ["stored"] and "my-sts" not in TASKS


def test_a_task_file_registered_before_the_call_stays_registered(data_root, tmp_path):
    """The command line registers its --task-file for the process, then calls evaluate() with it."""
    register_task_files([task_file(tmp_path)])
    embench.evaluate(Random(), task_files=[task_file(tmp_path)], data=data_root, results_dir=tmp_path / "r",
                     use_cache=False, progress=False)
    assert "my-sts" in TASKS and "my-sts" in REGISTERED


def test_a_task_registered_before_from_another_file_is_restored_after_the_call(tmp_path):
    """A task file registered for the process (the command line) and another file of the same name given to one
    call: the call's file replaced it in TASKS and REGISTERED for good, so later calls ran the other file's data."""
    from embench.tasks.task_file import task_files_registered

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    register_task_files([task_file(tmp_path / "a")])
    first, description = TASKS.get("my-sts"), TASKS.description("my-sts")
    with task_files_registered([task_file(tmp_path / "b")]) as names:
        assert names == ["my-sts"] and TASKS.get("my-sts") is not first
    assert TASKS.get("my-sts") is first and REGISTERED["my-sts"] is first
    assert TASKS.description("my-sts") == description and TASKS.aliases("my-sts") == []
