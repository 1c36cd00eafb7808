"""The README's commands run as written: every ``embench ...`` line of its shell blocks parses against the
CLI as it is (options, choices, subcommands), and the cheap ones run for real. A renamed option or a
removed choice fails here before a reader meets it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from embench.cli.app import app

README = Path(__file__).resolve().parents[1] / "README.md"
RUN_FOR_REAL = ("--help", "list")  # no data, no model: these run in milliseconds


def readme_commands() -> list[tuple[int, list[str]]]:
    """(line number, argv after ``embench``) of every embench command in the README's bash blocks."""
    out, block, pending, start = [], False, "", 0
    for no, line in enumerate(README.read_text().splitlines(), 1):
        if line.startswith("```"):
            block = line.strip() == "```bash"
            continue
        if not block:
            continue
        if not pending:
            start = no
        pending += line.rstrip("\\").rstrip() + " " if line.rstrip().endswith("\\") else line
        if line.rstrip().endswith("\\"):
            continue
        text, pending = pending, ""
        argv = _argv(text)
        if argv is not None:
            out.append((start, argv))
    return out


def _argv(text: str) -> list[str] | None:
    try:
        words = shlex.split(text, comments=True)
    except ValueError:
        return None
    words = [w for w in words if not re.fullmatch(r"[A-Z_]+=\S*", w)]  # VAR=value prefixes
    # a $VAR that is no option's value ("... $RESUME") expands to zero or more arguments of its own
    words = [w for i, w in enumerate(words) if not (re.fullmatch(r"\$[A-Z_]+", w) and i and not words[i - 1].startswith("-"))]
    for i, w in enumerate(words):
        if w == "embench" or (w == "embench.cli" and i and words[i - 1] == "-m"):
            rest = words[i + 1:]
            return None if "|" in rest else rest  # `embench list a | b` lists alternatives, not a command
    return None


def parse(argv: list[str]) -> None:
    """Parse ``argv`` as the CLI would, down to the leaf command, without running it."""
    cmd, name, args = typer.main.get_command(app), "embench", list(argv)
    while True:
        ctx = cmd.make_context(name, args)
        if not hasattr(cmd, "commands"):
            return
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        if not rest:
            return
        sub = cmd.get_command(ctx, rest[0])
        assert sub is not None, f"no command {rest[0]!r} under {name}"
        cmd, name, args = sub, rest[0], rest[1:]


COMMANDS = readme_commands()


def test_the_readme_has_commands():
    assert len(COMMANDS) > 30
    assert COMMANDS[0][1][:4] == ["run", "--model", "all-MiniLM-L6-v2", "--suite"]  # the first line of the README


@pytest.mark.parametrize(("line", "argv"), COMMANDS, ids=[f"README:{n}" for n, _ in COMMANDS])
def test_every_readme_command_parses(line, argv):
    if "--help" in argv:
        return  # parsing stops at --help; it runs for real below
    parse(argv)


@pytest.mark.parametrize(("line", "argv"), [(n, a) for n, a in COMMANDS
                                             if (a[0] in RUN_FOR_REAL or "--help" in a) and "--task-file" not in a],
                         ids=lambda x: str(x))
def test_the_cheap_readme_commands_run(line, argv):
    r = CliRunner().invoke(app, argv)
    assert r.exit_code == 0, f"README:{line} embench {' '.join(argv)}: {r.output}"


# -- names (issue 36, item 6): every suite, task, recipe, method, pooler, analysis, knob and concrete model
# -- name of a README command resolves here; each `train` line resolves its whole configuration (--show)
OFFLINE_FETCHED = {"all-mpnet-base-v2": "get-mpnet.sh"}  # models the README fetches into embench's model folder
MODEL_FLAGS = ("-m", "--model", "--models", "--teacher", "--tower2", "--llm", "--false-negative-filter")
TASK_COMMANDS = ("run", "compare", "audit", "grid", "analyze", "mteb")
# names the README's Plugins section defines in its example package (tests/test_plugins.py installs and runs it)
PLUGIN_EXAMPLE = {"annealed-infonce", "min"}


def _values(argv: list[str], *flags: str) -> list[str]:
    out = []
    for i, w in enumerate(argv):
        if w in flags and i + 1 < len(argv):
            out.append(argv[i + 1])
        out += [w.split("=", 1)[1] for f in flags if f.startswith("--") and w.startswith(f + "=")]
    return out


def _placeholder(model: str) -> bool:
    """X, A, B, $G, paths (runs/..., ./my-checkpoint), hub ids, ensembles and list files stand for the reader's own."""
    return (len(model) == 1 or model.startswith(("$", ".", "/", "ensemble:")) or "/" in model
            or model.endswith((".txt", ".list")))


@pytest.mark.parametrize(("line", "argv"), COMMANDS, ids=[f"README:{n}" for n, _ in COMMANDS])
def test_every_name_in_a_readme_command_resolves(line, argv):
    from embench.analysis.registry import ANALYSES
    from embench.audit.knobs import KNOBS
    from embench.models.aliases import ALIASES
    from embench.models.poolers import POOLERS
    from embench.tasks.names import resolve_tasks
    from embench.train.callbacks import analysis_specs, task_specs
    from embench.train.methods import METHODS
    from embench.train.recipes import RECIPES

    if argv[0] in TASK_COMMANDS and "--task-file" not in argv:  # a task file's tasks are the reader's own file's
        suites = [s for s in _values(argv, "--suite", "-s") if "," not in s]  # "--suite TASK,TASK" lists tasks
        resolve_tasks(suites[0] if suites else None, _values(argv, "-t", "--task"))
    task_specs(_values(argv, "--eval-task"))  # the trainer's own reading (STSBenchmark-dev: STS-B's dev split)
    analysis_specs(_values(argv, "--eval-analysis"))
    for r in _values(argv, "--recipe", "-r"):
        RECIPES.canonical(r)
    for m in set(_values(argv, "--method")) - PLUGIN_EXAMPLE:
        METHODS.canonical(m)
    for p in set(_values(argv, "--pooling")) - PLUGIN_EXAMPLE:
        POOLERS.canonical(p)
    for k in (k for ks in _values(argv, "--knobs") for k in ks.split(",")):
        assert k.replace("-", "_") in KNOBS, f"README:{line}: no audit knob {k!r}"
    if argv[0] == "analyze" and argv[1] != "list":
        for name in argv[1].split(","):
            ANALYSES.canonical(name)
    filters = argv[0] == "results" or argv[:2] in (["mteb", "export"], ["mteb", "blocks"])  # -m: a part of a name
    for model in [] if filters else _values(argv, *MODEL_FLAGS):
        if not _placeholder(model):
            assert model in ALIASES or model in OFFLINE_FETCHED, f"README:{line}: model {model!r} cannot be had offline"
            if model in OFFLINE_FETCHED:
                assert OFFLINE_FETCHED[model] in README.read_text(), f"README:{line}: say how {model} is fetched"


@pytest.mark.parametrize(("line", "argv"), [(n, a) for n, a in COMMANDS
                                             if a[0] == "train" and not set(_values(a, "--method")) & PLUGIN_EXAMPLE],
                         ids=lambda x: str(x))
@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_every_readme_train_command_resolves_its_configuration(line, argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for config in _values(argv, "--config"):  # the reader's own file: any valid one will do
        (tmp_path / config).write_text("lr: 3.0e-5\n")
    res = CliRunner().invoke(app, [*argv, "--show"] if "--show" not in argv else argv)
    assert res.exit_code == 0, f"README:{line} embench {' '.join(argv)} --show: {res.output}{res.exception or ''}"
    if "--seeds" in argv:
        out = _values(argv, "--out", "-o")[0]
        assert all(f"seed {s}: {out}/seed-{s}" in res.output for s in range(1, 6)), res.output
    import yaml  # --show prints YAML (each recipe option's source a comment on its line): read it as YAML

    data = _values(argv, "--train-data") or yaml.safe_load(res.output)["data"]
    assert data, f"README:{line}: no training data, neither given nor the recipe's"
