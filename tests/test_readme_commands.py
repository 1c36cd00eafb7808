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


@pytest.mark.parametrize(("line", "argv"), [(n, a) for n, a in COMMANDS if a[0] in RUN_FOR_REAL or "--help" in a],
                         ids=lambda x: str(x))
def test_the_cheap_readme_commands_run(line, argv):
    r = CliRunner().invoke(app, argv)
    assert r.exit_code == 0, f"README:{line} embench {' '.join(argv)}: {r.output}"
