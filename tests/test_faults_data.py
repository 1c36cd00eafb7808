"""Damaged data is an error naming the file and line, never a different score."""

from __future__ import annotations

import shutil

import pytest

import embench
from embench.core.errors import EmbenchError, MalformedDataError
from embench.data.root import DataRoot
from embench.tasks import TASKS


def _copy(data_root, tmp_path, rel: str):
    src = data_root / "senteval" / "downstream" / rel
    dest = tmp_path / "senteval" / "downstream" / rel
    shutil.copytree(src, dest)
    return dest


def test_an_sts_subset_whose_files_are_both_empty_is_an_error(data_root, tmp_path):
    dest = _copy(data_root, tmp_path, "STS/STS12-en-test")
    (dest / "STS.input.MSRpar.txt").write_text("")
    (dest / "STS.gs.MSRpar.txt").write_text("")
    with pytest.raises(EmbenchError, match=r"STS\.gs\.MSRpar\.txt.*no scored pairs"):
        TASKS.get("STS12").prepare(DataRoot(tmp_path), embench.EvalProtocol())


@pytest.mark.parametrize(("value", "problem"), [("inf", "not finite"), ("-inf", "not finite"), ("5.5", "outside"),
                                                 ("-0.1", "outside"), ("1e309", "not finite")])
def test_a_gold_score_that_is_not_finite_or_out_of_range_names_file_and_line(data_root, tmp_path, value, problem):
    dest = _copy(data_root, tmp_path, "STS/STS13-en-test")
    gold = (dest / "STS.gs.FNWN.txt").read_text().splitlines()
    gold[6] = value
    (dest / "STS.gs.FNWN.txt").write_text("\n".join(gold) + "\n")
    with pytest.raises(MalformedDataError, match=rf"STS\.gs\.FNWN\.txt:7: .*{problem}"):
        TASKS.get("STS13").prepare(DataRoot(tmp_path), embench.EvalProtocol())


def test_a_tab_inside_a_sentence_is_an_error_not_a_shorter_sentence(data_root, tmp_path):
    dest = _copy(data_root, tmp_path, "STS/STS13-en-test")
    lines = (dest / "STS.input.FNWN.txt").read_text().splitlines()
    a, b = lines[9].split("\t")
    lines[9] = a.replace(" ", "\t", 1) + "\t" + b
    (dest / "STS.input.FNWN.txt").write_text("\n".join(lines) + "\n")
    with pytest.raises(MalformedDataError, match=r"STS\.input\.FNWN\.txt:10: .*3"):
        TASKS.get("STS13").prepare(DataRoot(tmp_path), embench.EvalProtocol())


def test_a_tab_inside_an_sts_b_sentence_is_an_error(data_root, tmp_path):
    dest = _copy(data_root, tmp_path, "STS/STSBenchmark")
    lines = (dest / "sts-test.csv").read_text(encoding="utf-8").splitlines()
    lines[4] = lines[4] + "\textra words"
    (dest / "sts-test.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"sts-test\.csv:5: .*8"):
        TASKS.get("STSBenchmark").prepare(DataRoot(tmp_path), embench.EvalProtocol())


def test_a_tab_inside_an_mrpc_sentence_is_an_error(data_root, tmp_path):
    dest = _copy(data_root, tmp_path, "MRPC")
    lines = (dest / "msr_paraphrase_test.txt").read_text(encoding="utf-8").splitlines()
    lines[3] = lines[3] + "\tmore"
    (dest / "msr_paraphrase_test.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    from embench.tasks.senteval.datasets import TRANSFER_DATASETS
    from embench.tasks.senteval.reading import read_task

    mrpc = next(d for d in TRANSFER_DATASETS if d.name == "MRPC")
    with pytest.raises(MalformedDataError, match=r"msr_paraphrase_test\.txt:4: .*6"):
        read_task(DataRoot(tmp_path), mrpc)


def test_a_transfer_split_with_no_samples_is_an_error(data_root, tmp_path):
    dest = _copy(data_root, tmp_path, "TREC")
    (dest / "TREC_10.label").write_text("\n\n")
    from embench.tasks.senteval.datasets import TRANSFER_DATASETS
    from embench.tasks.senteval.reading import read_task

    trec = next(d for d in TRANSFER_DATASETS if d.name == "TREC")
    with pytest.raises(EmbenchError, match=r"TREC_10\.label.*no samples"):
        read_task(DataRoot(tmp_path), trec)
