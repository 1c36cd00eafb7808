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
LISTS = ["tasks", "suites", "poolers", "models", "analyses", "datasets", "families", "methods", "recipes", "commands"]
for args in [["--help"]] + [[name, "--help"] for name in COMMANDS] + [["list", what] for what in LISTS]:
    r = runner.invoke(app, args)
    out[" ".join(args)] = [r.exit_code, sorted(m for m in HEAVY if m in sys.modules)]
print(json.dumps(out))
"""


@pytest.mark.slow
def test_help_of_every_command_and_the_lists_import_no_heavy_library():
    code = f"HEAVY = {HEAVY!r}\n" + PROBE
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(seen) > 5
    for args, (code_, heavy) in seen.items():
        assert code_ == 0, args
        assert heavy == [], f"`embench {args}` imported {heavy}"


NAME_PROBE = """
import json, sys
from typer.testing import CliRunner
from embench.cli import app
out = {}
for args in ARGS:
    r = CliRunner().invoke(app, args)  # main() prints an EmbenchError as one line: here it is the exception
    out[" ".join(args)] = [type(r.exception).__name__, str(r.exception), sorted(m for m in HEAVY if m in sys.modules)]
print(json.dumps(out))
"""
UNKNOWN_NAMES = [
    (["run", "-m", "m", "--suite", "sts-al"], "unknown suite 'sts-al'"),
    (["run", "-m", "m", "--task", "STS99"], "unknown task 'STS99'"),
    (["run", "-m", "m", "--pooling", "meen"], "Did you mean 'mean'?"),
    (["compare", "-m", "a", "-m", "b", "--task", "STS99"], "unknown task 'STS99'"),
    (["audit", "-m", "m", "--task", "STS99"], "unknown task 'STS99'"),
    (["train", "--method", "simcs"], "unknown training method 'simcs'"),
    (["train", "--recipe", "bellmm"], "unknown training recipe 'bellmm'"),
    (["train", "--method", "crop", "--pooling", "meen"], "unknown pooler 'meen'"),
    (["analyze", "layers", "-m", "m", "-o", "out", "--suite", "mteb-lit"], "unknown suite 'mteb-lit'"),
    (["analyze", "knn", "-m", "m", "-o", "out", "--pooling", "meen"], "unknown pooler 'meen'"),
    (["mteb", "run", "-m", "m", "--suite", "mteb-lit"], "unknown suite 'mteb-lit'"),
]


@pytest.mark.slow
def test_an_unknown_suite_task_pooler_method_or_recipe_is_reported_before_any_heavy_import():
    code = f"HEAVY = {HEAVY!r}\nARGS = {[a for a, _ in UNKNOWN_NAMES]!r}\n" + NAME_PROBE
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    for args, message in UNKNOWN_NAMES:
        error, text, heavy = seen[" ".join(args)]
        assert error == "UnknownNameError" and message in text, (args, error, text)
        assert heavy == [], f"`embench {' '.join(args)}` imported {heavy} before naming the unknown name"


def test_import_embench_is_light_and_the_public_names_resolve_on_use():
    # (embench.evaluate itself imports torch on first use: every other test resolves it)
    code = (f"import sys, embench; p = embench.EvalProtocol(); heavy = [m for m in {HEAVY!r} if m in sys.modules]; "
            "print(heavy, p.aggregation, 'evaluate' in dir(embench), embench.__version__ > '', "
            # the subpackages as the README calls them after `import embench` alone
            "callable(embench.analysis.run), callable(embench.stats.paired_bootstrap_p), 'report' in dir(embench))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[] all True True True True True"


def test_every_subpackage_is_reached_from_the_package():
    import importlib.util
    from pathlib import Path

    import embench

    folders = {p.parent.name for p in Path(embench.__file__).parent.glob("*/__init__.py")} - {"cli", "core"}
    assert set(embench._SUBPACKAGES) == folders
    assert all(importlib.util.find_spec(f"embench.{name}") for name in embench._SUBPACKAGES)


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


def test_progress_off_silences_every_tqdm_bar_and_puts_tqdm_back(capsys):
    """``progress=False`` in the API silences other libraries' tqdm bars as TQDM_DISABLE does for the CLI's -q (which
    only a process that has not imported tqdm yet can set); nested and left, tqdm is as it was."""
    import io

    from tqdm.auto import tqdm

    from embench.report.progress import third_party_bars

    before = tqdm(range(1), file=io.StringIO()).disable
    with third_party_bars(False):
        with third_party_bars(False):  # an engine's pass inside an mteb task's scoring
            list(tqdm(range(3), desc="Computing text hashes"))
        list(tqdm(range(3), desc="still silenced"))
        assert tqdm(range(1), disable=False, file=io.StringIO()).disable is False  # asked for: shown, as under the variable
    assert capsys.readouterr().err == ""
    assert tqdm(range(1), file=io.StringIO()).disable == before
    with third_party_bars(True):
        assert tqdm(range(1), file=io.StringIO()).disable == before


@pytest.mark.slow
def test_quiet_silences_third_party_bars(tiny_bert_dir, data_root, tmp_path):
    """mteb's own tqdm bar ("Computing text hashes") shows without -q and not with it."""
    import os

    env = {**os.environ, "EMBENCH_DATA": str(data_root), "EMBENCH_CACHE": str(tmp_path / "cache")}
    env.pop("TQDM_DISABLE", None)
    args = [sys.executable, "-m", "embench.cli", "mteb", "run", "-m", str(tiny_bert_dir), "-t", "MTEB:STS16",
            "--results-dir", str(tmp_path / "results"), "--overwrite"]
    loud = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    quiet = subprocess.run([*args, "-q"], capture_output=True, text=True, env=env, timeout=600)
    assert loud.returncode == 0 and quiet.returncode == 0, quiet.stderr
    assert "Computing text hashes" in loud.stderr
    assert "Computing text hashes" not in quiet.stderr and "%|" not in quiet.stderr
    # -f json: stdout is one JSON document (the scores with the block averages), the data notes go to stderr
    as_json = subprocess.run([*args[:-1], "-q", "-f", "json"], capture_output=True, text=True, env=env, timeout=600)
    doc = json.loads(as_json.stdout)
    score = next(v for k, v in doc["rows"][0].items() if k.startswith("MTEB:STS16"))  # "MTEB:STS16*": its data differ
    assert score == pytest.approx(doc["block_averages"][0]["STS"], abs=1e-12)
    assert "local data differs from MTEB's copy" in as_json.stderr + as_json.stdout and "differs" not in as_json.stdout
