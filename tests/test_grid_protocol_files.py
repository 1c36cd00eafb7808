"""A protocols file that cannot be a list of protocols is refused naming the file and the entry, never a traceback."""

from __future__ import annotations

import pytest

from embench.core.errors import EmbenchError
from embench.grid.spec import read_protocols


@pytest.mark.parametrize(("text", "message"), [
    ("- {1: 2}\n", r"entry 1: 1 is not an option name"),
    ("- {}\n- {name: [a, b]}\n", r"entry 2: name \['a', 'b'\] is not a name"),
    ("- {name: {a: 1}}\n", r"entry 1: name \{'a': 1\} is not a name"),
    ("- {name: }\n", r"entry 1: name None is not a name"),
])
def test_a_protocol_entry_with_a_key_that_is_no_option_name_or_a_name_that_is_no_name_is_refused(tmp_path, text, message):
    f = tmp_path / "p.yaml"
    f.write_text(text)
    with pytest.raises(EmbenchError, match=rf"--protocols {f}: {message}"):
        read_protocols(f)


def test_a_protocols_file_that_is_not_utf8_is_refused_naming_it(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("- {name: flow, aggregation: wmean}\n", encoding="utf-16")
    with pytest.raises(EmbenchError, match=rf"--protocols {f}: not UTF-8 text \(byte 0\); save it as UTF-8"):
        read_protocols(f)


def test_a_numeric_name_is_still_a_name(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("- {name: 2024, aggregation: wmean}\n")
    assert read_protocols(f) == [{"aggregation": "wmean", "name": "2024"}]
