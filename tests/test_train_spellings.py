"""The training API's errors name its parameters; ``embench train`` names its options.

``Trainer(make_config(lr=-1))`` said ``--lr must be more than 0.0``, ``eval_max_length=0`` said ``--set eval_max_length
must ...`` and ``data=3`` said ``--train-data``: the checks are the command line's. ``make_config``, ``train`` and
``Trainer`` now say them as their keywords (embench/train/spellings.py), as every other public function does, and keep
the caller's random state; the command line, and the Slurm tasks it submits, keep its own words.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from embench.cli import app
from embench.core.boundary import command_line, python_api
from embench.core.errors import EmbenchError
from embench.core.spellings import PYTHON_NAMES, respell
from embench.train import METHODS, Method, Trainer, make_config, train
from embench.train.config import FIELDS, option_flag
from embench.train.spellings import _OFF, make_config_spelling, train_spelling


@pytest.mark.parametrize(("given", "message"), [
    ({"lr": -1}, "lr must be more than 0.0, got -1"),
    ({"max_steps": 0}, "max_steps must be at least 1, got 0"),
    ({"eval_max_length": 0}, "eval_max_length must be at least 1, got 0"),  # --set eval_max_length on the command line
    ({"optimizer": "sgd"}, "optimizer must be one of adamw, adam, got 'sgd'"),  # --set KEY with a plain word after
    ({"log_steps": 0}, "log_steps must be at least 1, got 0"),  # said as --log-steps, a flag train has not
    ({"method": "jtcse", "nce_form": "x"}, "nce_form must be paper or code, got 'x'"),  # a method's own (--nce-form)
    ({"resume": True, "overwrite": True}, "resume continues the run in out, overwrite removes it: give one of them"),
])
def test_trainer_names_the_config_s_fields(given, message):
    with pytest.raises(EmbenchError, match=f"^{message}$"):
        Trainer(make_config(**given))


@pytest.mark.parametrize(("given", "message"), [
    ({"data": 3}, "data must be a name or a list of names, got 3"),  # --train-data on the command line
    ({"data_root": 3}, r"data_root must be text \(a name or a path\), got 3; in a config file, quote it"),  # --data
    ({"method_options": 3}, "method_options must be a mapping"),  # "--set (or its own flag): ..." on the command line
    ({"file": "/no/such/train.yaml"}, "file='/no/such/train.yaml' does not exist"),  # --config
])
def test_make_config_names_its_parameters(given, message):
    with pytest.raises(EmbenchError, match=f"^{message}$"):
        make_config(**given)


def test_train_names_its_config_s_fields(tmp_path):
    with pytest.raises(EmbenchError, match=r"^batch_size=3 must divide evenly over 1 process\(es\) x 2 accumulation"):
        train(make_config(batch_size=3, grad_accumulation=2, out=str(tmp_path)))


def test_the_table_turns_each_flag_into_its_parameter():
    assert train_spelling("--set eval_max_length=5 and --set eval_max_length, then --set dropout.") == (
        "eval_max_length=5 and eval_max_length, then dropout.")
    assert train_spelling("--set eval_max_length 513 is more than 512; --set margn is not one") == (
        "eval_max_length=513 is more than 512; margn is not one")  # a KEY no option has: as given
    assert train_spelling("`embench train --set dropout` or --set dropout 0") == "`embench train --set dropout` or dropout=0"
    assert train_spelling("--train-data x.txt, --data /root: --max-steps 0") == (
        "data='x.txt', data_root='/root': max_steps=0")
    assert train_spelling("--recipe crop needs --tower2 DIR; --no-auto-fit, --pretrained") == (
        "recipe='crop' needs tower2=DIR; auto_fit=False, from_scratch=False")
    # only the options these functions take: train has no file, and evaluate's --ci is not training's
    kept = "--config a.yaml: --ci 95 --nproc_per_node=4"
    assert train_spelling(kept) == kept
    assert make_config_spelling("--config a.yaml: max_steps") == "file='a.yaml': max_steps"


def test_the_flags_are_those_of_embench_train():
    import typer

    command = typer.main.get_command(app).commands["train"]
    flags = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
    named = {option_flag(n) for n in FIELDS if not option_flag(n).startswith("--set ")}
    assert named | set(_OFF) <= flags, sorted((named | set(_OFF)) - flags)


def test_an_option_with_no_parameter_takes_the_word_after_it():
    """core/values.py's "--set value 'x' must be ..." was " value 'x' must be ...": a plain word after --set counted as
    the sentence's, and the option left its space behind."""
    assert respell("--set value 'x' must be yes/no", PYTHON_NAMES["analysis"]) == "value 'x' must be yes/no"
    assert respell("--set k=2: fewer", PYTHON_NAMES["analysis"]) == "k=2: fewer"


@dataclasses.dataclass
class _ProbeOptions:
    probe_knob: int = 1

    def __post_init__(self):
        if self.probe_knob < 1:
            raise EmbenchError(f"--probe-knob must be at least 1, got {self.probe_knob}")


class _Probe(Method):
    """A plug-in's method: its options are known only once it is registered."""

    data_kind = "sentences"
    Options = _ProbeOptions


def test_a_plugin_method_s_options_are_its_parameters_too(monkeypatch):
    monkeypatch.setitem(METHODS._items, "spelling-probe", _Probe)
    monkeypatch.setitem(METHODS._lower, "spelling-probe", "spelling-probe")
    with pytest.raises(EmbenchError, match=r"^probe_knob must be at least 1, got 0$"):
        Trainer(make_config(method="spelling-probe", probe_knob=0))


@pytest.mark.slow  # the command line, each call importing and resolving as `embench train --show` does
@pytest.mark.parametrize(("args", "said"), [
    (["--lr", "-1"], "--lr must be more than 0.0, got -1.0"),
    (["--set", "eval_max_length=0"], "--set eval_max_length must be at least 1, got 0"),
    (["--set", "temprature=1"], "--set (or its own flag): 'temprature' is neither a training option"),
    (["--set", "group_by_length=maybe"], "--set group_by_length must be true or false"),
    (["--set", "eval_tasks=[1]"], "--eval-task must be a name or a list of names, got [1]"),
    (["--set", "data=3"], "--train-data must be a name or a list of names, got 3"),
    # options with no flag of their own are said as --set KEY (they said --log-steps, --warmup-of, --nce-form: no
    # such option)
    (["--set", "log_steps=0"], "--set log_steps must be at least 1, got 0"),
    (["--set", "warmup_of=step"], "--set warmup_of must be run or epoch, got 'step'"),
    (["--method", "jtcse", "--set", "nce_form=x"], "--set nce_form must be paper or code, got 'x'"),
    (["--method", "jtcse", "--set", "modulus_on=x"], "--set modulus_on must be pooler or cls, got 'x'"),
])
def test_the_command_line_keeps_its_options_and_the_api_is_itself_again_after_it(args, said):
    r = CliRunner().invoke(app, ["train", *args, "--show"])
    assert isinstance(r.exception, EmbenchError) and str(r.exception).startswith(said), r.output
    with pytest.raises(EmbenchError, match=r"^lr must be more than 0\.0"):
        Trainer(make_config(lr=-1))


def test_a_slurm_seed_task_says_the_options_of_the_command_that_submitted_it(tmp_path, monkeypatch, capsys):
    from embench.grid import slurm
    from embench.train import seeds
    from embench.train.config import TrainConfig

    @python_api(train_spelling)
    def training(cfg, seed):  # where the seed's run stops: in the Trainer, which a Python caller calls too
        raise EmbenchError("--lr must be more than 0.0, got -1")

    monkeypatch.setattr(seeds, "train_seed", training)
    monkeypatch.setattr(slurm, "job_environment", lambda: None)
    with pytest.raises(SystemExit):
        seeds.SeedJob()(TrainConfig(out=str(tmp_path)), 1)
    assert capsys.readouterr().err == "seed 1: --lr must be more than 0.0, got -1\n"
    with pytest.raises(EmbenchError, match=r"^lr must"):  # and Python is Python's again after the task
        training(None, 1)


def _draws():
    return random.random(), float(np.random.rand()), float(torch.rand(1))


def _seed_all(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@pytest.mark.slow
def test_train_keeps_the_caller_s_random_state_and_trains_what_the_command_line_trains(
        tiny_bert_dir, wiki_corpus, data_root, tmp_path, one_thread):
    from safetensors.torch import load_file

    def run(out):
        return train(make_config(method="unsup-simcse", model=str(tiny_bert_dir), data=[str(wiki_corpus)], log_steps=1,
                                 data_root=str(data_root), out=str(tmp_path / out), max_steps=2, eval_steps=0,
                                 batch_size=16, max_length=16, precision="fp32", progress=False))

    _seed_all(1)
    expected = _draws()
    _seed_all(1)
    python = run("python")
    assert _draws() == expected  # as if train had not run
    torch.manual_seed(2)
    ended = command_line()  # `embench train`: nothing kept around it, the run seeded from cfg.seed alone
    try:
        cli = run("cli")
    finally:
        ended()
    assert [h["loss"] for h in python.history] == [h["loss"] for h in cli.history]
    a, b = (load_file(r.best_dir / "model.safetensors") for r in (python, cli))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
