"""The CLI: protocol options generated from the one list of choices, shared options, --prompt everywhere."""

from __future__ import annotations

import inspect
import typing

import pytest
import typer
from typer.testing import CliRunner

from embench.audit.knobs import KNOBS, PROTOCOL_KNOBS
from embench.cli import app
from embench.evaluation.protocols import CHOICES, EvalProtocol

runner = CliRunner()
PROMPT = 'This sentence: "{text}" means in one word:"'


def _options(*path: str) -> dict[str, object]:
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return {opt: p for p in command.params for opt in p.opts}


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_every_protocol_axis_is_one_cli_option_with_its_choices():
    from embench.cli.commands.mteb import run as mteb_run
    from embench.cli.commands.run import run

    def choices(command, axis):
        enum_or_none, option = typing.get_args(inspect.signature(command).parameters[axis].annotation)
        return tuple(e.value for e in typing.get_args(enum_or_none)[0]), option.help

    for axis, choice in CHOICES.items():
        assert f"--{axis.replace('_', '-')}" in _options("run")
        assert choices(run, axis) == (choice.values, choice.help)
    assert choices(mteb_run, "similarity") == (CHOICES["similarity"].values, CHOICES["similarity"].help)
    assert runner.invoke(app, ["run", "-m", "M", "--aggregation", "median"]).exit_code == 2


def test_the_audit_varies_the_same_values_from_the_protocol_default():
    for axis in PROTOCOL_KNOBS:
        assert KNOBS[axis] == list(CHOICES[axis].values)
    assert {axis: choice.values[0] for axis, choice in CHOICES.items()} == {
        axis: value for axis, value in EvalProtocol().to_dict().items() if axis in CHOICES
    }


def test_cli_dtype_names_are_the_encoders():
    from embench.cli.options import DTYPE_NAMES
    from embench.models.encoder import DTYPES

    assert DTYPE_NAMES == tuple(DTYPES)


def test_prompt_is_one_shared_option_of_run_audit_analyze_and_mteb():
    shared = {path: _options(*path)["--prompt"] for path in (("run",), ("audit",), ("analyze",), ("mteb", "run"))}
    assert len({option.help for option in shared.values()}) == 1


def test_prompt_and_protocol_options_reach_the_api(captured, tmp_path):
    r = runner.invoke(app, ["run", "-m", "M", "-t", "STS12", "--prompt", PROMPT, "--aggregation", "mean", "-q"])
    assert r.exit_code == 0, r.output
    assert captured["evaluate"]["prompt"] == PROMPT and captured["evaluate"]["aggregation"] == "mean"
    assert "correlation" not in captured["evaluate"]  # unset options are left to the suite and protocol defaults
    assert runner.invoke(app, ["mteb", "run", "-m", "M", "--prompt", PROMPT, "--similarity", "dot"]).exit_code == 0
    assert captured["evaluate"]["prompt"] == PROMPT and captured["evaluate"]["similarity"] == "dot"
    assert runner.invoke(app, ["audit", "-m", "M", "--prompt", PROMPT]).exit_code == 0
    assert captured["audit"]["prompt"] == PROMPT
    assert runner.invoke(app, ["analyze", "spectrum", "-m", "M", "-o", str(tmp_path), "--prompt", PROMPT]).exit_code == 0
    assert captured["analyze"]["prompt"] == PROMPT


def test_the_bidirectional_mode_reaches_the_api_beside_k(captured, tmp_path):
    bi = ["--bidirectional-last", "1", "--bidirectional-mode", "billm"]
    assert runner.invoke(app, ["run", "-m", "M", "-t", "STS12", *bi, "-q"]).exit_code == 0
    assert (captured["evaluate"]["bidirectional_last"], captured["evaluate"]["bidirectional_mode"]) == (1, "billm")
    assert runner.invoke(app, ["mteb", "run", "-m", "M", *bi]).exit_code == 0
    assert captured["evaluate"]["bidirectional_mode"] == "billm"
    assert runner.invoke(app, ["audit", "-m", "M", *bi]).exit_code == 0
    assert captured["audit"]["bidirectional_mode"] == "billm"
    assert runner.invoke(app, ["analyze", "spectrum", "-m", "M", "-o", str(tmp_path), *bi]).exit_code == 0
    assert captured["analyze"]["bidirectional_mode"] == "billm"


def test_analyses_load_their_models_with_the_prompt(tiny_bert_dir):
    from embench.analysis.inputs import model_refs

    ref = model_refs([tiny_bert_dir], prompt=PROMPT, device="cpu")[0]
    assert ref.encoder().describe()["prompt"] == PROMPT
    assert ref.encoder(layer=1).describe()["prompt"] == PROMPT


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_model_encoding_and_storage_options_are_declared_once():
    """run, mteb run, compare, analyze, audit and grid take them from one table: same spelling, help and default."""
    from pathlib import Path

    from embench.cli import option_groups, options

    def params(*path: str) -> dict[str, object]:
        command = typer.main.get_command(app)
        for name in path:
            command = command.commands[name]
        return {p.name: p for p in command.params}

    commands = [params(*path) for path in (("run",), ("mteb", "run"), ("compare",), ("analyze",), ("audit",), ("grid",))]
    uses = 0
    for name, (annotation, default) in option_groups.SHARED.items():
        found = [c[name] for c in commands if name in c]
        uses += len(found)
        assert found, f"{name} is taken by no command"
        assert len({(tuple(o.opts), o.help, o.default) for o in found}) == 1, name
        assert found[0].default == default and found[0].help == typing.get_args(annotation)[1].help
    assert uses >= 50  # each of the 16 is taken by several of the six commands
    # and none of the six lists a model or encoding option parameter by parameter again (other commands, and
    # results or mteb export for the storage ones, take single options through the same declarations)
    model_side = [option_groups.SHARED[n][0] for n in (*option_groups.MODEL, *option_groups.ENCODING)]
    alias_names = [k for k, v in vars(options).items() if any(v is a for a in model_side)]
    assert len(alias_names) == len(model_side)
    for stem in ("run", "mteb", "compare", "analyze", "audit", "grid"):
        f = Path(option_groups.__file__).parent / "commands" / f"{stem}.py"
        assert not [n for n in alias_names if f": {n}" in f.read_text()], f.name


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_the_cli_leaves_the_tokenizer_its_threads():
    """TOKENIZERS_PARALLELISM=false runs the Rust tokenizer on one core (on a GPU the engine's pass then waits on
    tokenising): the CLI keeps the user's setting and sets none of its own."""
    import os
    import subprocess
    import sys

    code = ("import os, sys\nsys.argv = ['embench', '--help']\nfrom embench.cli.app import main\ntry:\n    main()\n"
            "except SystemExit:\n    pass\nprint('setting:', os.environ.get('TOKENIZERS_PARALLELISM'))")
    env = {k: v for k, v in os.environ.items() if k != "TOKENIZERS_PARALLELISM"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("setting: None")
    mine = subprocess.run([sys.executable, "-c", code], env={**env, "TOKENIZERS_PARALLELISM": "false"},
                          capture_output=True, text=True, check=True).stdout
    assert mine.strip().endswith("setting: false")  # a user's own choice stays


@pytest.mark.slow  # over 0.3 s on 2 cores: three commands' options built
def test_a_shared_option_s_help_says_what_each_command_does_with_it():
    """compare --help called --truncate-dim and --quantize "repeatable, one row per dimension", and compare refuses a
    second value; list --help said a --task-file's task "runs ... unless --task names the tasks to run", and list runs
    nothing and has no --task. The shared text is one definition; what a command does with it is said per command."""
    from embench.cli.options import TASK_FILE_HELP

    compare, listing, run = _options("compare"), _options("list"), _options("run")
    assert "compare: one value" in compare["--truncate-dim"].help and "compare: one value" in compare["--quantize"].help
    assert "--task" not in listing and "runs" not in listing["--task-file"].help
    assert listing["--task-file"].help.startswith(TASK_FILE_HELP) and "listed" in listing["--task-file"].help
    assert run["--task-file"].help.startswith(TASK_FILE_HELP) and "unless --task names" in run["--task-file"].help
