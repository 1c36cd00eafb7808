"""The command line prints embench's logged warnings as its other warnings ("warning: ..."), not as
"WARNING embench.api: ..."; other loggers and embench's INFO lines keep their level and name."""

from __future__ import annotations

import logging

from embench.cli.app import _LogFormat


def _line(name: str, level: int, message: str) -> str:
    record = logging.LogRecord(name, level, __file__, 1, message, None, None)
    return _LogFormat("%(levelname)s %(name)s: %(message)s").format(record)


def test_embench_warnings_read_as_one_warning_line():
    assert _line("embench.api", logging.WARNING, "could not save the record of STS12") == "warning: could not save the record of STS12"
    assert _line("embench.api", logging.INFO, "scored") == "INFO embench.api: scored"
    assert _line("transformers.modeling", logging.WARNING, "x") == "WARNING transformers.modeling: x"
