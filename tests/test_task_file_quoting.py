"""A TSV task file written by pandas (``to_csv(sep="\\t")``) quotes a text holding a quote or a tab. ``quoting: csv``
reads it as pandas does; unset, such a field is refused (file:line, naming the key) rather than scored with its quotes;
``quoting: none`` keeps the quotes as text, as STS's own files' bare quotes are."""

from __future__ import annotations

import pytest

from embench.core.errors import EmbenchError, MalformedDataError
from embench.evaluation.protocols import EvalProtocol
from embench.tasks.task_file import load_task_file
from embench.tasks.task_file.declaration import read_declaration
from embench.tasks.task_file.rows import read_pairs

PANDAS_TSV = 'sentence1\tsentence2\tscore\n"He said ""x"""\tb\t1\n"a\tb"\t"""whole"""\t2\nplain\t"bare"\t3\n'


def _task(tmp_path, quoting: str | None = None, fmt: str = "tsv"):
    (tmp_path / f"p.{fmt}").write_text(PANDAS_TSV)
    extra = f"quoting: {quoting}\n" if quoting else ""
    (tmp_path / "t.yaml").write_text(f"name: q\nkind: pairs\nfiles: p.{fmt}\nformat: {fmt}\nscore_range: [0, 5]\n{extra}")
    return read_declaration(tmp_path / "t.yaml")


def test_quoting_csv_reads_a_pandas_tsv_as_pandas_does(tmp_path):
    pairs = read_pairs(_task(tmp_path, "csv"), "test")
    assert pairs.left == ['He said "x"', "a\tb", "plain"] and pairs.right == ["b", '"whole"', "bare"]  # as pandas.read_csv reads them


def test_unset_quoting_refuses_a_csv_quoted_field_by_file_line_and_key(tmp_path):
    with pytest.raises(MalformedDataError, match=r"p\.tsv:2: field 1 .* looks CSV-quoted; set quoting: csv"):
        read_pairs(_task(tmp_path), "test")


def test_quoting_none_keeps_quotes_as_text_and_other_formats_refuse_the_key(tmp_path):
    (tmp_path / "p.tsv").write_text('sentence1\tsentence2\tscore\n"He said ""x"""\t"bare"\t1\n')
    (tmp_path / "t.yaml").write_text("name: q\nkind: pairs\nfiles: p.tsv\nscore_range: [0, 5]\nquoting: none\n")
    assert read_pairs(read_declaration(tmp_path / "t.yaml"), "test").left == ['"He said ""x"""']
    with pytest.raises(EmbenchError, match="quoting.*applies to format tsv"):
        _task(tmp_path, "csv", fmt="csv")
    with pytest.raises(EmbenchError, match="quoting.*expected none or csv"):
        _task(tmp_path, "pandas")


def test_quoting_keys_records_of_its_own(tmp_path):
    """The same TSV read with another ``quoting`` gives other rows: its records must not be served to the other
    reading. The task file's own sha256 is in ``task_data``, so the key changes with it."""
    (tmp_path / "p.tsv").write_text('sentence1\tsentence2\tscore\n"a"\tb\t1\nc\td\t2\n')

    def task_data(quoting: str) -> str:
        (tmp_path / "t.yaml").write_text(f"name: q\nkind: pairs\nfiles: p.tsv\nscore_range: [0, 5]\nquoting: {quoting}\n")
        return load_task_file(tmp_path / "t.yaml").recorded_protocol(EvalProtocol()).to_dict()["task_data"]

    assert task_data("csv") != task_data("none")
