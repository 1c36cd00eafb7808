"""A SentEval transfer split of fewer than two classes (an emptied class file, a truncated dev or test file) is a
damaged file: refused while the task is read, before any encoding, naming the file. It was caught only by the
scorer, after every text was encoded, as "CR: a single class ([1])", naming no file."""

from __future__ import annotations

import shutil

import pytest

import embench
from embench.core.errors import EmbenchError
from embench.data import DataRoot
from embench.tasks.senteval.datasets import TRANSFER_DATASETS
from embench.tasks.senteval.reading import read_task

DATA = {d.name: d for d in TRANSFER_DATASETS}


class NeverEncodes:
    fingerprint = "never"

    def encode(self, texts, **kw):
        raise AssertionError("encoded before the damaged file was found")


def copy(data_root, tmp_path, folder: str):
    dest = tmp_path / "senteval/downstream" / folder
    shutil.copytree(data_root / "senteval/downstream" / folder, dest)
    dest.chmod(0o755)
    for f in dest.iterdir():
        f.chmod(0o644)  # the shared copy is read-only
    return dest


@pytest.mark.slow  # a run through the API: its model stack imported
def test_an_empty_class_file_is_named_before_any_encoding(data_root, tmp_path):
    dest = copy(data_root, tmp_path, "CR")
    (dest / "custrev.neg").write_text("")
    with pytest.raises(EmbenchError, match=r"custrev\.neg: no samples; CR reads one class from each of its files"):
        embench.evaluate(NeverEncodes(), tasks=["CR"], data=tmp_path, results_dir=tmp_path / "results",
                         progress=False, use_cache=False)


@pytest.mark.parametrize(("task", "folder", "file", "split", "keep", "label"), [
    ("TREC", "TREC", "TREC_10.label", "test", lambda line: line.startswith("NUM:"), "NUM"),
    pytest.param("SST2", "SST/binary", "sentiment-dev", "dev", lambda line: line.rstrip().endswith("\t1"), "1",
                 marks=pytest.mark.slow),  # SST's 67,349 training sentences read
    ("TREC", "TREC", "train_5500.label", "train", lambda line: line.startswith("HUM:"), "HUM"),
])
def test_a_split_file_of_one_class_is_named(data_root, tmp_path, task, folder, file, split, keep, label):
    dest = copy(data_root, tmp_path, folder)
    encoding = DATA[task].encoding
    lines = (dest / file).read_bytes().decode(encoding).splitlines()
    (dest / file).write_bytes(("\n".join(line for line in lines if keep(line)) + "\n").encode(encoding))
    with pytest.raises(EmbenchError, match=rf"{file}: every sample of the {split} split of {task} has the label "
                                           rf"'{label}'; a classifier needs at least two classes"):
        read_task(DataRoot(tmp_path), DATA[task])


def test_a_malformed_line_is_named_before_a_split_of_one_class(data_root, tmp_path):
    dest = tmp_path / "senteval/downstream/SST/binary"
    dest.mkdir(parents=True)
    for split, lines in {"train": ["good film\t1"], "dev": ["bad\t0", "fine\t1"], "test": ["fine\t1", "meh\t7"]}.items():
        (dest / f"sentiment-{split}").write_text("\n".join(lines) + "\n")
    with pytest.raises(EmbenchError, match=r"sentiment-test:2: unknown label '7'"):
        read_task(DataRoot(tmp_path), DATA["SST2"])
