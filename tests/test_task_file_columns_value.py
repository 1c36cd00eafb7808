"""``columns:`` in a task file: absent or null means none given; any other value that is not a mapping, falsy ones
(0, "", [], false) included, is a mistake named by file, line and key, as a truthy one was (``or {}`` took a falsy
value for "none given" and read the columns named as their roles in silence)."""

from __future__ import annotations

import pytest

from embench.core.errors import EmbenchError
from embench.tasks.task_file.declaration import read_declaration

TASK = "name: x\nkind: pairs\nfiles: {{test: pairs.tsv}}\ncolumns: {columns}\nscore_range: [0, 5]\n"


def write(tmp_path, columns: str | None, suffix: str = ".yaml"):
    (tmp_path / "pairs.tsv").write_text("sentence1\tsentence2\tscore\na\tb\t1\n")
    if suffix == ".toml":
        text = 'name = "x"\nkind = "pairs"\nscore_range = [0, 5]\n' + (f"columns = {columns}\n" if columns else "") + \
            '[files]\ntest = "pairs.tsv"\n'
    else:
        text = TASK.format(columns=columns).replace("columns: None\n", "")  # None: no columns key
    (tmp_path / f"task{suffix}").write_text(text)
    return tmp_path / f"task{suffix}"


@pytest.mark.parametrize("value", ["0", '""', "[]", "false", "3", "[text]"])
def test_a_columns_value_that_is_not_a_mapping_is_named_falsy_or_not(tmp_path, value):
    with pytest.raises(EmbenchError, match=r"task.yaml:4: columns: expected a mapping of role -> column"):
        read_declaration(write(tmp_path, value))


@pytest.mark.parametrize("value", ["0", '""', "[]", "false"])
def test_a_falsy_columns_value_in_toml_is_named_too(tmp_path, value):
    with pytest.raises(EmbenchError, match=r"task.toml:4: columns: expected a mapping of role -> column"):
        read_declaration(write(tmp_path, value, ".toml"))


@pytest.mark.parametrize("value", [None, "null", "~", "", "{}"])
def test_no_columns_or_a_null_or_empty_mapping_reads_the_columns_named_as_their_roles(tmp_path, value):
    # "columns:" with nothing after it is YAML's null
    decl = read_declaration(write(tmp_path, value))
    assert decl.columns == {"sentence1": "sentence1", "sentence2": "sentence2", "score": "score"}
