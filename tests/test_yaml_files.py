"""The files a user writes, read strictly and named exactly: a YAML key given twice is refused (PyYAML kept the last one,
silently) and a YAML syntax error names the line and column where the parser found it (the line where the enclosing
block began was named instead), in task files and grid protocol files alike; a task file's TOML with a byte-order mark,
a TSV with old-Mac line endings and an empty subset cell read or fail as they should."""

from __future__ import annotations

import pytest
import yaml

from embench.core.errors import EmbenchError
from embench.core.yaml_text import load_yaml, yaml_error
from embench.grid.spec import read_protocols
from embench.tasks.task_file import FileTask

ROWS = "sentence1\tsentence2\tscore\tsubset\na b\tc d\t3\tx\ne f\tg h\t2\ty\ni j\tk l\t1\tx\n"


def _task(tmp_path, declared: str, data: str | bytes = ROWS, suffix: str = ".yaml", name: str = "pairs.tsv") -> FileTask:
    (tmp_path / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    (tmp_path / f"t{suffix}").write_bytes(declared.encode("utf-8"))
    return FileTask.load(tmp_path / f"t{suffix}")


def _error(text: str) -> str:
    with pytest.raises(yaml.YAMLError) as caught:
        load_yaml(text)
    return yaml_error("f.yaml", caught.value)


def test_a_key_given_twice_is_refused_with_both_places_and_a_merge_key_may_still_be_overridden():
    assert _error("kind: pairs\nkind: classification\n") == ("f.yaml:2:1: not valid YAML: the key 'kind' is given twice "
                                                            "(first at line 1, column 1); give each key once")
    assert "f.yaml:1:18: not valid YAML: the key 'test' is given twice (first at line 1, column 9)" in _error(
        "files: {test: a, test: b}\n")
    assert "f.yaml:3:3: not valid YAML: the key 'a' is given twice" in _error("x:\n  a: 1\n  a: 2\n")
    assert load_yaml("base: &b {seed: 1, text: raw}\nrun:\n  <<: *b\n  seed: 2\n")["run"] == {"seed": 2, "text": "raw"}
    assert load_yaml("a: 1\nb: {a: 1}\n") == {"a": 1, "b": {"a": 1}}  # one key in two mappings is no repeat


def test_a_syntax_error_names_where_the_parser_found_it_then_where_its_block_began():
    assert _error("name: d5\nkind: pairs\nfiles: {test: five.tsv}\nscore_range: [0, 5]\n  bad: indent\n") == (
        "f.yaml:5:3: not valid YAML: expected <block end>, but found '<block mapping start>' "
        "(while parsing a block mapping at line 1, column 1)")
    assert _error("a: b: c\n") == "f.yaml:1:5: not valid YAML: mapping values are not allowed here"


def test_a_task_file_with_a_repeated_key_or_a_bad_indent_is_refused_naming_its_line(tmp_path):
    good = "name: mine\nkind: pairs\nfiles: {test: pairs.tsv}\nscore_range: [0, 5]\n"
    assert _task(tmp_path, good).sizes() == "test 3 pairs; 2 subsets"
    with pytest.raises(EmbenchError, match=r"t\.yaml:3:1: not valid YAML: the key 'kind' is given twice \(first at line 2"):
        _task(tmp_path, good.replace("kind: pairs\n", "kind: pairs\nkind: classification\n"))
    with pytest.raises(EmbenchError, match=r"t\.yaml:3:22: not valid YAML: the key 'test' is given twice"):
        _task(tmp_path, good.replace("{test: pairs.tsv}", "{test: a.tsv, test: pairs.tsv}"))
    with pytest.raises(EmbenchError, match=r"t\.yaml:5:3: not valid YAML: expected <block end>"):
        _task(tmp_path, good + "  bad: indent\n")


def test_a_grid_protocols_file_with_a_repeated_key_or_a_syntax_error_names_its_line(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("- {aggregation: all}\n- aggregation: wmean\n  aggregation: mean\n")
    with pytest.raises(EmbenchError, match=r"--protocols .*p\.yaml:3:3: not valid YAML: the key 'aggregation' is given twice"):
        read_protocols(f)
    f.write_text("- {aggregation: all}\n- correlation: pearson\n   text: raw\n")
    with pytest.raises(EmbenchError, match=r"--protocols .*p\.yaml:3:8: not valid YAML: mapping values are not allowed"):
        read_protocols(f)


def test_a_toml_task_file_with_a_byte_order_mark_reads_as_without(tmp_path):
    declared = 'name = "mine"\nkind = "pairs"\nfiles = {test = "pairs.tsv"}\nscore_range = [0, 5]\n'
    task = _task(tmp_path, "\ufeff" + declared, suffix=".toml")
    assert (task.name, task.sizes()) == ("mine", "test 3 pairs; 2 subsets")
    with pytest.raises(EmbenchError, match=r"t\.toml:4: score_range: expected \[min, max\]"):  # its keys' lines still known
        _task(tmp_path, "\ufeff" + declared.replace("[0, 5]", "[5, 0]"), suffix=".toml")


def test_a_tsv_with_old_mac_line_endings_reads_as_with_newlines(tmp_path):
    declared = "name: mine\nkind: pairs\nfiles: {test: pairs.tsv}\nscore_range: [0, 5]\n"
    task = _task(tmp_path, declared, ROWS.replace("\n", "\r"))
    pairs = task.split("test")
    assert (pairs.left, list(pairs.gold), pairs.subsets) == (["a b", "e f", "i j"], [3.0, 2.0, 1.0], ["x", "y", "x"])


def test_an_empty_subset_cell_is_said_to_be_an_empty_subset_not_a_label(tmp_path):
    declared = "name: mine\nkind: pairs\nfiles: {test: pairs.tsv}\nscore_range: [0, 5]\n"
    with pytest.raises(EmbenchError, match=r"pairs\.tsv:3: subset is empty; a subset is a non-empty string or an integer"):
        _task(tmp_path, declared, ROWS.replace("\t2\ty\n", "\t2\t \n")).split("test")
    labelled = "name: mine\nkind: classification\nfiles: {all: pairs.tsv}\ncolumns: {text: sentence1, label: subset}\n"
    with pytest.raises(EmbenchError, match=r"pairs\.tsv:3: label is empty; a label is a non-empty string"):
        _task(tmp_path, labelled, ROWS.replace("\t2\ty\n", "\t2\t \n")).split("all")


def test_a_training_config_refuses_a_key_given_twice_and_names_the_line(tmp_path):
    """A training config read by yaml.safe_load kept the last of two `lr:` lines without a word."""
    from embench.train.config import read_config_file

    cfg = tmp_path / "c.yaml"
    cfg.write_text("lr: 1e-4\nbatch_size: 8\nlr: 2e-4\n")
    with pytest.raises(EmbenchError, match=r"--config .*c\.yaml:3:1: .*the key 'lr' is given twice \(first at line 1"):
        read_config_file(cfg)
    cfg.write_text("lr: 1e-4\nbatch_size: 8\n")
    assert read_config_file(cfg) == {"lr": 1e-4, "batch_size": 8}
