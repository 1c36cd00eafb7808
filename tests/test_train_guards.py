"""Training guards (issue 35): one run per output folder, checkpoints only of healthy weights, collapse named."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time

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


def test_collapse_is_five_steps_in_a_row_without_a_gradient():
    watch = CollapseWatch()
    uniform = math.log(8)
    assert not any(watch.update(uniform, 1e-5) for _ in range(4))
    assert watch.update(uniform, 0.0)  # the fifth
    watch = CollapseWatch()
    assert not any(watch.update(uniform - 0.01 * i, 4.0) for i in range(20))  # learning: never
    assert not any(watch.update(uniform, 1e-5 if i % 4 else 0.5) for i in range(20))  # a gradient now and then resets it



def test_a_collapse_says_every_text_gets_one_vector_only_where_the_loss_is_ln_of_the_candidates():
    """--lr 30 at batch 16 stopped with a flat 3.1685, not ln(16) = 2.7726, and the message said every text got the
    same vector all the same."""
    watch = CollapseWatch()
    assert not any(watch.update(3.1685, 0.0) for _ in range(4)) and watch.update(3.1685, 0.0)
    head = "the run collapsed: the loss has stayed {} with a zero gradient norm for 5 steps up to step 9 ("
    assert watch.describe(math.log(16), 9, 16) == head.format("2.7726") + (
        "ln(16), a uniform softmax over 16 in-batch candidates: every text gets the same vector; a learning rate far "
        "too high does this)")
    assert "(ln(32), a uniform softmax over 32 in-batch candidates" in watch.describe(math.log(32) + 0.005, 9, 16)  # hard negatives
    assert watch.describe(3.1685, 9, 16) == head.format("3.1685") + (
        "not the ln(16) = 2.7726 of every text on the same vector: the gradient vanished and nothing is learnt; a "
        "learning rate far too high does this)")


def test_a_resume_checkpoint_due_while_the_gradient_is_flat_waits_for_a_gradient():
    """A checkpoint due at step 15 of a collapse that began at step 12 overwrote step 10's good one; the collapse,
    declared at step 16, then had none from before it to name."""
    watch, saved = CollapseWatch(), []
    norms = {step: (1e-5 if 12 <= step <= 16 or 18 <= step <= 19 else 0.5) for step in range(1, 22)}
    for step, norm in norms.items():
        watch.update(1.0, norm)
        if watch.save_now(step % 5 == 0, step == 21):
            saved.append(step)
    # 15 is held through the flat steps and written at 17, the first step with a gradient again; 20 falls due in a
    # second flat run (18-19 flat, 20 not): written at 20; the last step is written whatever its gradient
    assert saved == [5, 10, 17, 20, 21]


# --- end to end on a tiny BERT -----------------------------------------------------------------------

def _config(tiny_bert_dir, data_root, out, **kw):
    from embench.train import make_config

    kw = {"lr": 1e-3, "max_steps": 4, "save_steps": 2, "max_length": 32, "max_examples": 200, **kw}
    return make_config(method="crop", model=str(tiny_bert_dir), data=["20newsgroups"], data_root=str(data_root),
                       out=str(out), batch_size=8, log_steps=1, eval_steps=0, progress=False, **kw)


@pytest.mark.slow
def test_two_training_runs_into_one_out_one_refused_the_other_finishes(tiny_bert_dir, data_root, tmp_path):
    out = tmp_path / "X"
    args = ["train", "--method", "crop", "-m", str(tiny_bert_dir), "--train-data", "20newsgroups", "--data", str(data_root),
            "--out", str(out), "--batch-size", "8", "--max-length", "32", "--max-examples", "200", "--max-steps", "40",
            "--eval-steps", "0", "-q"]
    first = subprocess.Popen([sys.executable, "-m", "embench.cli", *args, "--seed", "1"], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (out / LOCK_NAME).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    second = subprocess.run([sys.executable, "-m", "embench.cli", *args, "--seed", "2"], capture_output=True, text=True)
    assert second.returncode == 2 and f"--out {out} is in use by another training run (process {first.pid}" in second.stderr
    assert first.wait(timeout=300) == 0, first.stderr.read()
    assert json.loads((out / "best" / "embench_training.json").read_text())["step"] == 40
    assert json.loads((out / "train_config.json").read_text())["seed"] == 1 and not (out / LOCK_NAME).exists()


@pytest.mark.slow
@pytest.mark.parametrize("option, value, named", [("max_length", 100000, "max_length=100000"),  # train's keywords
                                                  ("eval_max_length", 513, "eval_max_length=513"),
                                                  ("export_max_length", 1000, "export_max_length=1000")])
def test_a_length_beyond_the_model_s_positions_is_one_error_before_the_weights_load(tiny_bert_dir, data_root, tmp_path,
                                                                                    option, value, named):
    """Before, --max-length 100000 was taken, and a text longer than the 512 positions failed mid-step with a traceback."""
    from embench.train import train

    with pytest.raises(EmbenchError, match=named + " is more than the model's 512 positions"):
        train(_config(tiny_bert_dir, data_root, tmp_path / "run", **{option: value}))
    assert not (tmp_path / "run" / "checkpoints").exists()


@pytest.mark.slow
def test_a_huge_learning_rate_is_stopped_as_a_collapse_and_no_collapsed_state_is_named(tiny_bert_dir, data_root, tmp_path):
    from embench.train import TrainingDivergedError, train

    with pytest.raises(TrainingDivergedError, match=r"the run collapsed: .* zero gradient norm for 5 steps up to step \d+") as err:
        train(_config(tiny_bert_dir, data_root, tmp_path / "run", lr=1e4, max_steps=30, save_steps=1))
    # a checkpoint a step later than the collapse's first step holds collapsed weights: not offered to resume from
    assert "was written after that began: start again with a lower lr" in str(err.value)


@pytest.mark.slow
def test_resume_finishes_the_export_of_a_run_killed_after_its_last_checkpoint(tiny_bert_dir, data_root, tmp_path, monkeypatch):
    from embench.train import train
    from embench.train.trainer import Trainer

    out = tmp_path / "run"
    real = Trainer.export

    def killed(self, folder, step, extra=None):
        raise KeyboardInterrupt  # the last checkpoint is written, then the process dies before the export

    monkeypatch.setattr(Trainer, "export", killed)
    with pytest.raises(KeyboardInterrupt):
        train(_config(tiny_bert_dir, data_root, out))
    assert not (out / "best").exists() and json.loads((out / "checkpoint-last" / "step.json").read_text())["step"] == 4
    monkeypatch.setattr(Trainer, "export", real)
    done = train(_config(tiny_bert_dir, data_root, out, resume=True))
    assert done.best_dir.is_dir() and json.loads((out / "best" / "embench_training.json").read_text())["step"] == 4


@pytest.mark.slow
@pytest.mark.parametrize(("change", "message"), [
    ({"max_examples": 150}, "the checkpoint was trained with max_examples=200"),
    ({"max_length": 16}, "the checkpoint was trained with max_length=32"),
    ({"freeze_layers": 1}, "the checkpoint was trained with freeze_layers="),
])
def test_resume_refuses_another_run_naming_the_option(tiny_bert_dir, data_root, tmp_path, change, message):
    from embench.core.errors import EmbenchError
    from embench.train import train

    out = tmp_path / "run"
    train(_config(tiny_bert_dir, data_root, out, max_steps=2))
    with pytest.raises(EmbenchError, match=message):
        train(_config(tiny_bert_dir, data_root, out, max_steps=4, resume=True, **change))


@pytest.mark.slow
def test_resume_refuses_an_edited_training_file_and_drops_a_torn_metrics_line(tiny_bert_dir, data_root, tmp_path):
    from embench.core.errors import EmbenchError
    from embench.train import make_config, train

    corpus = tmp_path / "wiki.txt"
    corpus.write_text("".join(f"sentence number {i} of a small corpus.\n" for i in range(64)))

    def cfg(**kw):
        kw = {"max_steps": 4, **kw}
        return make_config(method="unsup-simcse", model=str(tiny_bert_dir), data=[str(corpus)], out=str(tmp_path / "run"),
                           batch_size=8, max_length=16, save_steps=2, eval_steps=0, log_steps=1, progress=False, **kw)

    train(cfg(max_steps=2))
    with open(tmp_path / "run" / "metrics.jsonl", "a") as f:
        f.write('{"step": 3, "lo')  # a run killed while writing its log
    resumed = train(cfg(resume=True))
    assert [h["step"] for h in resumed.history if "loss" in h] == [3, 4]
    corpus.write_text(corpus.read_text().replace("number 5 ", "number five "))
    with pytest.raises(EmbenchError, match="the training examples differ from the checkpoint's"):
        train(cfg(max_steps=6, resume=True))


def test_an_out_that_cannot_be_written_is_one_error_before_anything_loads(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(EmbenchError, match=rf"--out {blocker / 'out'}: cannot write there"):
        OutputLock(blocker / "out").acquire()


def test_an_out_that_is_a_file_is_said_to_be_a_file(tmp_path, data_root):
    """It was "--out X: cannot write there (File exists)"; a results folder that is a file is said as such too."""
    from embench.train import make_config, train
    from embench.train.seeds import train_seeds

    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    said = rf"^--out {blocker} is a file, not a folder; choose another --out$"
    cfg = make_config(method="unsup-simcse", model="no-such-model-is-loaded", data_root=str(data_root), out=str(blocker))
    for start in (lambda: OutputLock(blocker).acquire(), lambda: train_seeds(cfg, [1])):
        with pytest.raises(EmbenchError, match=said):
            start()
    with pytest.raises(EmbenchError, match=rf"^out='{blocker}' is a file, not a folder; choose another out$"):
        train(cfg)  # the Python API names its parameter
    assert blocker.read_text() == "x"


def test_a_full_disk_while_writing_a_checkpoint_is_one_error_and_keeps_no_temporary_file(tmp_path, monkeypatch):
    import errno

    from embench.train import checkpoints

    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    checkpoints.save_resume(tmp_path, model=model, optimizer=opt, scheduler=sched, step=1, extra={})
    good = (tmp_path / "state.pt").read_bytes()

    def full(obj, f, *a, **k):  # f: the open temporary file of core.atomic
        f.write(b"half")
        f.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(OSError):
        checkpoints.save_resume(tmp_path, model=model, optimizer=opt, scheduler=sched, step=2, extra={})
    assert (tmp_path / "state.pt").read_bytes() == good and sorted(p.name for p in tmp_path.iterdir()) == ["state.pt", "step.json"]


def test_tensorboard_without_its_package_is_refused_before_anything_loads(tmp_path, monkeypatch):
    """It was said only after the model had loaded and the memory line had printed."""
    import importlib.util

    from embench.train import make_config, resolve

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tensorboard" else real(name, *a))
    with pytest.raises(EmbenchError, match=r"--tensorboard needs the tensorboard package \(pip install 'embench\[tensorboard\]'\)"):
        resolve(make_config(method="unsup-simcse", model="no-such-model-is-loaded", out=str(tmp_path / "run"), tensorboard=True))
    assert not (tmp_path / "run").exists()


@pytest.mark.slow  # builds a Trainer (its tokenizer)
@pytest.mark.parametrize(("examples", "drop_last", "message"), [
    (0, False, r"no training examples in \S+wiki\.txt$"),  # not "(--set drop_last)": it is off
    (3, True, r"3 training examples are fewer than one batch of 8, which drop_last leaves out \(--set drop_last=false\)"),
])
def test_too_few_training_examples_names_drop_last_only_when_it_is_set(tiny_bert_dir, data_root, tmp_path, monkeypatch,
                                                                       examples, drop_last, message):
    from embench.data import training_sets
    from embench.train import Trainer, make_config

    monkeypatch.setattr(training_sets, "load", lambda kind, specs, root: [f"text {i}" for i in range(examples)])
    trainer = Trainer(make_config(method="unsup-simcse", model=str(tiny_bert_dir), data=[str(tmp_path / "wiki.txt")],
                                  data_root=str(data_root), out=str(tmp_path / "run"), batch_size=8, max_steps=2,
                                  eval_steps=0, progress=False, drop_last=drop_last))
    with pytest.raises(EmbenchError, match=message):
        trainer.setup()
