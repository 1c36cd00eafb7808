"""Every registry works one way: named entries, listed by ``embench list``, the nearest name on a typo."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from embench.cli import app
from embench.cli.commands.list import CATALOGUE, LISTS
from embench.core.errors import UnknownNameError

runner = CliRunner()


@pytest.mark.parametrize("what", list(CATALOGUE))
def test_every_list_shows_each_entry_with_its_description(what):
    registry = LISTS.get(what)
    r = runner.invoke(app, ["list", what])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert [line.split()[0] for line in lines] == registry.names()
    for line, n in zip(lines, registry.names(), strict=True):  # name (aliases)  description
        aliases = registry.aliases(n)
        head = n + (f" ({', '.join(aliases)})" if aliases else "")
        assert line.startswith(head) and line[len(head):].strip() == registry.description(n)


@pytest.mark.parametrize("what", list(CATALOGUE))
def test_a_misspelt_entry_names_the_nearest(what):
    registry = LISTS.get(what)
    first = registry.names()[0]
    with pytest.raises(UnknownNameError) as e:
        registry.get(first + "x")
    assert first in e.value.suggestions


def test_descriptions_come_from_the_entries():
    lists = {what: LISTS.get(what) for what in ("tasks", "suites", "analyses", "datasets", "commands")}
    assert all(all(r.description(n) for n in r.names()) for r in lists.values())


def test_a_misspelt_list_names_the_nearest():
    r = runner.invoke(app, ["list", "task"])
    assert isinstance(r.exception, UnknownNameError)
    assert "unknown list 'task'. Did you mean 'tasks'" in str(r.exception)


@pytest.mark.slow
def test_listing_tasks_imports_no_task_code():
    code = ("import sys; from embench.tasks import TASKS; TASKS.names(); TASKS.description('STS12'); "
            "print(sorted(m for m in sys.modules if m.startswith('embench.tasks.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(["embench.tasks.base", "embench.tasks.senteval", "embench.tasks.senteval.datasets",
                               "embench.tasks.sts", "embench.tasks.sts.datasets"])


@pytest.mark.slow
def test_python_m_embench_cli_runs_the_app():
    out = subprocess.run([sys.executable, "-m", "embench.cli", "list", "suites"], capture_output=True, text=True, check=True)
    assert out.stdout.split()[0] == "sts-all"
