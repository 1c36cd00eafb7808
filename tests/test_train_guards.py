"""Training guards (issue 35): one run per output folder, checkpoints only of healthy weights, collapse named."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
import torch

from embench.core.errors import EmbenchError
from embench.train.out_lock import LOCK_NAME, OutputLock
from embench.train.weights_health import CollapseWatch, weights_problem


def test_a_second_run_into_one_output_folder_is_refused_naming_the_first(tmp_path):
    with OutputLock(tmp_path):
        with pytest.raises(EmbenchError, match=rf"--out {tmp_path} is in use by another training run \(process {os.getpid()}"):
            OutputLock(tmp_path).acquire()
    assert not (tmp_path / LOCK_NAME).exists()  # released
    OutputLock(tmp_path).acquire().release()


def test_a_stale_lock_of_a_dead_process_is_taken_over_with_a_warning(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout
    import socket

    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": int(dead), "host": socket.gethostname(), "started": "then"}))
    with pytest.warns(UserWarning, match=f"taking over the lock of training process {int(dead)}"):
        lock = OutputLock(tmp_path).acquire()
    assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == os.getpid()
    lock.release()


def test_weights_problem_names_nan_and_exploded_parameters():
    lin = torch.nn.Linear(3, 2)
    assert weights_problem(lin) is None
    with torch.no_grad():
        lin.weight[0, 1] = 6e5
    assert "parameter weight reaches 6e+05" in weights_problem(lin)
    with torch.no_grad():
        lin.bias[1] = float("nan")
    assert weights_problem(lin) == "parameter bias holds NaN or inf"


def test_collapse_is_five_flat_steps_with_no_gradient():
    watch = CollapseWatch()
    uniform = math.log(64)
    assert not any(watch.update(uniform, 0.0) for _ in range(4))
    assert watch.update(uniform, 0.0)  # the fifth
    watch = CollapseWatch()
    assert not any(watch.update(uniform - 0.01 * i, 0.5) for i in range(20))  # learning: never
    assert not any(watch.update(uniform, 0.0 if i % 4 else 0.1) for i in range(20))  # a gradient now and then resets it
