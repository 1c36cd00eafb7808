"""First use on a bare machine (issue 36): what the README's commands need is installed or named."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "install-report-tools"


def _fake_bin(tmp_path: Path, uid: int, present: tuple[str, ...] = ()) -> Path:
    """A PATH holding only a fake ``id`` (printing ``uid``), a fake ``apt-get`` that logs its arguments, and ``present``."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    scripts = {"id": f"echo {uid}", "apt-get": f'echo "$@" >> {tmp_path / "apt.log"}'}
    scripts.update({tool: "exit 0" for tool in present})
    for name, body in scripts.items():
        (bin_ / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_ / name).chmod(0o755)
    return bin_


def _run(bin_: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/bash", str(SCRIPT)], env={"PATH": str(bin_)}, capture_output=True, text=True)


def test_report_tools_are_installed_with_apt_get_as_root(tmp_path):
    done = _run(_fake_bin(tmp_path, 0))
    assert done.returncode == 0, done.stderr
    calls = (tmp_path / "apt.log").read_text().splitlines()
    assert calls[0] == "update -qq" and calls[1].startswith("install -y -qq --no-install-recommends")
    assert set(calls[1].split()) >= {"texlive-latex-base", "texlive-latex-recommended", "poppler-utils", "chromium"}
    assert "installing" in done.stderr


def test_without_root_the_script_names_what_to_install_and_fails(tmp_path):
    done = _run(_fake_bin(tmp_path, 1000))
    assert done.returncode == 1 and not (tmp_path / "apt.log").exists()
    assert "apt-get install texlive-latex-base texlive-latex-recommended poppler-utils chromium" in done.stderr


def test_nothing_is_installed_when_every_tool_is_there(tmp_path):
    done = _run(_fake_bin(tmp_path, 0, present=("pdflatex", "pdftoppm", "pdftotext", "pdffonts", "chromium")))
    assert done.returncode == 0 and done.stderr == "" and not (tmp_path / "apt.log").exists()


@pytest.mark.parametrize("tool", ["pdflatex", "chromium"])
def test_one_missing_tool_is_enough_to_install(tmp_path, tool):
    present = tuple(t for t in ("pdflatex", "pdftoppm", "pdftotext", "pdffonts", "chromium") if t != tool)
    assert _run(_fake_bin(tmp_path, 0, present)).returncode == 0
    assert "install" in (tmp_path / "apt.log").read_text()
