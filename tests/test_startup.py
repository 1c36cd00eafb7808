"""Instant start: ``import embench``, every ``--help`` and ``embench list`` load none of the heavy libraries; the public
names still resolve on first use."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers", "pandas", "scipy", "sklearn", "sentence_transformers", "mteb", "matplotlib")

PROBE = """
import json, sys
from typer.testing import CliRunner
from embench.cli import app
from embench.cli.commands import COMMANDS
out = {}
runner = CliRunner()
LISTS = ["tasks", "suites", "models", "analyses", "datasets", "families", "methods", "recipes", "commands"]
for args in [["--help"]] + [[name, "--help"] for name in COMMANDS] + [["list", what] for what in LISTS]:
    r = runner.invoke(app, args)
    out[" ".join(args)] = [r.exit_code, sorted(m for m in HEAVY if m in sys.modules)]
print(json.dumps(out))
"""


@pytest.mark.slow
def test_help_of_every_command_and_the_lists_import_no_heavy_library():
    # (`embench list poolers` still imports torch: the poolers are registered where they are defined)
    code = f"HEAVY = {HEAVY!r}\n" + PROBE
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(seen) > 5
    for args, (code_, heavy) in seen.items():
        assert code_ == 0, args
        assert heavy == [], f"`embench {args}` imported {heavy}"


def test_import_embench_is_light_and_the_public_names_resolve_on_use():
    # (embench.evaluate itself imports torch on first use: every other test resolves it)
    code = (f"import sys, embench; p = embench.EvalProtocol(); heavy = [m for m in {HEAVY!r} if m in sys.modules]; "
            "print(heavy, p.aggregation, 'evaluate' in dir(embench), embench.__version__ > '')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[] all True True"


def test_progress_off_a_terminal_is_a_log_line_every_interval_and_at_the_end(monkeypatch, capsys):
    from embench.report.progress import RateProgress

    monkeypatch.setenv("EMBENCH_PROGRESS_EVERY", "0")
    with RateProgress(True, "encoding", "model-x", 10, "texts", ".0f", fields=("loss",)) as bar:
        bar.advance(4, loss="0.5")
        bar.advance(6)
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith("encoding model-x: 4/10 texts, loss 0.5, ") and "s left" in lines[0]
    assert lines[-1].startswith("encoding model-x: 10/10 texts") and lines[-1].endswith(" s)")
    with RateProgress(False, "encoding", "model-x", 10, "texts") as bar:
        bar.advance(10)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("package", ["embench", "embench.models", "embench.train", "embench.train.methods", "embench.stats"])
def test_no_lazy_name_is_also_a_submodule(package):
    """A submodule imported elsewhere would shadow a lazily exported name of the same spelling."""
    import importlib
    import importlib.util

    mod = importlib.import_module(package)
    for name in mod.__all__:
        assert importlib.util.find_spec(f"{package}.{name}") is None, f"{package}.{name} is both a name and a module"
        assert not isinstance(getattr(mod, name), type(sys)), f"{package}.{name} resolved to a module"


def test_loading_a_model_says_what_it_loads_and_quiet_says_nothing(tiny_bert_dir, capsys):
    from embench.encoding.engine import Engine
    from embench.models.loader import load_model

    Engine(load_model(tiny_bert_dir), progress=True).embed(["a sentence", "another one"])
    err = capsys.readouterr().err
    assert f"loading {load_model(tiny_bert_dir).name} from {tiny_bert_dir}" in err and "texts" in err
    Engine(load_model(tiny_bert_dir), progress=False).embed(["a sentence"])
    assert capsys.readouterr().err == ""
