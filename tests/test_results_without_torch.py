"""`embench results show` and ``embench.results`` list stored records without importing torch (seconds and hundreds
of MB for a listing): ``results`` lives apart from the engine and the model loaders that :mod:`embench.api` imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.results import Record, ResultStore, record_key

ENCODER = {"fingerprint": "f1", "pooling": "mean", "layer": None, "max_length": None, "dtype": "fp32", "normalize": True,
           "lowercase": False, "prompt": ""}
SHOW = """
import sys
from typer.testing import CliRunner
import embench
from embench.cli import app
r = CliRunner().invoke(app, ["results", "show", "--results-dir", sys.argv[1], "-t", "STS12"])
assert r.exit_code == 0 and "STS12" in r.stdout, r.output
assert len(embench.results(sys.argv[1])) == 1
print("torch" in sys.modules)
"""


@pytest.mark.slow  # a fresh interpreter
def test_results_show_and_the_results_function_import_no_torch(tmp_path):
    protocol = EvalProtocol().to_dict()
    ResultStore(tmp_path).save(Record(task="STS12", display="STS12", kind="sts", model="m", main_score=0.5, scores={},
                                      protocol=protocol, encoder=ENCODER, key=record_key("STS12", ENCODER, protocol)))
    out = subprocess.run([sys.executable, "-c", SHOW, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"
