"""Task files in `results show`, `report` and mteb's export: a task file's data digest (``task_data``) tells two versions
of that task apart (two rows, two protocols, two mteb task names), never two task files (one row of a model), and task
files' columns come in one order whatever the hash seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from embench.cli.commands.results import results_frame
from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.results import Record
from embench.report.paper import ProtocolMixError, paper_tables
from embench.tasks.record_axes import protocol_axes

ENCODER = {"fingerprint": "f1", "pooling": "mean", "layer": None, "max_length": None, "dtype": "fp32", "normalize": True,
           "lowercase": False, "prompt": ""}
META = {"task_meta": {"task_file_kind": "pairs", "subsets": ["test"]}}


def rec(task: str, score: float, data: str) -> Record:
    return Record(task=task, display=task, kind="sts", model="m", main_score=score, scores={},
                  protocol={**EvalProtocol().to_dict(), "task_data": data}, encoder=dict(ENCODER), provenance=META)


THREE = [rec("my-csv", 0.28, "c1"), rec("my-tsv", 0.29, "t1"), rec("my-jsonl", 0.30, "j1")]


def test_three_task_files_of_one_model_are_one_row_with_an_average():
    frame, note, _ = results_frame(THREE)
    assert len(frame) == 1 and "task_data" not in frame.columns
    assert list(frame.columns) == ["model", "my-csv", "my-jsonl", "my-tsv", "Avg."]  # outside the registry: by name
    assert frame.loc[0, "Avg."] == pytest.approx(0.29)
    assert "task_data (my-tsv)=t1" in note


def test_two_versions_of_one_task_file_are_two_rows_each_with_the_other_task_files():
    frame, _, _ = results_frame([*THREE, rec("my-csv", -0.28, "c2")])
    assert len(frame) == 2 and list(frame["task_data (my-csv)"]) == ["c1", "c2"]
    assert list(frame["my-csv"]) == [0.28, -0.28] and list(frame["my-tsv"]) == [0.29, 0.29]


def test_report_keeps_task_files_in_one_table_and_two_versions_of_one_apart():
    (table,) = paper_tables(THREE, axes_of=protocol_axes)
    assert len(table.frame) == 1 and list(table.frame.columns) == ["my-csv", "my-tsv", "my-jsonl", "Avg."]
    with pytest.raises(ProtocolMixError, match=r"task_data \(my-csv\)"):  # not "two records ... disagree"
        paper_tables([*THREE, rec("my-csv", -0.28, "c2")], axes_of=protocol_axes)
    (rows,) = paper_tables([*THREE, rec("my-csv", -0.28, "c2")], axes_of=protocol_axes, split="rows")
    assert list(rows.frame["my-csv"]) == [0.28, -0.28] and list(rows.frame["my-tsv"]) == [0.29, 0.29]


def test_two_versions_of_a_task_file_are_two_mteb_task_names():
    from embench.tasks.mteb.own_results import own_task_name

    names = {own_task_name(r) for r in (rec("my-csv", 0.28, "c1"), rec("my-csv", -0.28, "c2"))}
    assert names == {f"embench-my-csv__correlation=spearman__text=senteval__similarity=cosine__task_data={d}"
                     for d in ("c1", "c2")}
    plugin = SimpleNamespace(task="mine", kind="sts", protocol={**EvalProtocol().to_dict(), "task_code": "d 1, m:o, code x"})
    assert own_task_name(plugin).rsplit("__", 1)[1].startswith("task_code=")  # a hash: no spaces or commas in a name


@pytest.mark.slow
def test_task_file_columns_do_not_follow_the_hash_seed():
    code = ("import json, sys; from tests.test_task_file_versions import THREE, results_frame; "
            "print(json.dumps(list(results_frame(THREE)[0].columns)))")
    seen = {subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": str(s)}, check=True,
                           capture_output=True, text=True, cwd=os.path.dirname(os.path.dirname(__file__))).stdout
            for s in (1, 2, 3)}
    assert [json.loads(s) for s in seen] == [["model", "my-csv", "my-jsonl", "my-tsv", "Avg."]]
