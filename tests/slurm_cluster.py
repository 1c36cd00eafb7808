"""A real Slurm cluster on this machine for the tests that need one (``slurm_cluster``, session-scoped: started
by the first test that asks, stopped after the last). ``scripts/slurm-cluster`` installs Slurm, munge and the
accounting database with apt-get when they are missing (as root, once per machine), writes a one-node
``slurm.conf`` into a temporary folder and starts munged, mariadbd, slurmdbd, slurmctld and slurmd; at the end
it stops them by their process ids. Where the cluster cannot start, the tests fail with the script's reason.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from embench.grid.slurm_jobs import ACTIVE  # sacct's states of a job that has not ended

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "slurm-cluster"


@dataclass
class SlurmCluster:
    folder: Path

    @property
    def conf(self) -> Path:
        return self.folder / "slurm.conf"

    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf), **extra}

    def run(self, *cmd: str, timeout: float = 60) -> str:
        done = subprocess.run(cmd, env=self.env(), capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"{' '.join(cmd)}: {done.stderr}"
        return done.stdout

    def states(self, job: str) -> dict[str, str]:
        """sacct's state of each task of ``job`` (an array id gives all its tasks: ``12_0``, ``12_1``)."""
        out = self.run("sacct", "-n", "-X", "-P", "-o", "JobID,State", "-j", job)
        return {line.split("|")[0]: line.split("|")[1].split()[0] for line in out.splitlines() if "|" in line}

    def wait(self, job: str, timeout: float = 240) -> dict[str, str]:
        """Wait until every task of ``job`` has ended; their final states."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = self.states(job)
            if states and not ACTIVE & set(states.values()) and "[" not in "".join(states):  # "12_[1-3]": not started
                return states
            time.sleep(0.5)
        raise AssertionError(f"Slurm job {job} still not ended after {timeout:.0f} s: {self.states(job)}; "
                             f"logs in {self.folder / 'log'}")


@pytest.fixture(scope="session")
def slurm_cluster(request, tmp_path_factory) -> SlurmCluster:
    folder = tmp_path_factory.mktemp("slurm")
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():  # an install takes a while, a failure says why: both reach the terminal
        done = subprocess.run(["bash", str(SCRIPT), "start", str(folder)], stdout=subprocess.DEVNULL)
    if done.returncode != 0:
        subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], capture_output=True)
        pytest.fail(f"scripts/{SCRIPT.name} could not start a Slurm cluster (its message is above; logs in "
                    f"{folder / 'log'})", pytrace=False)
    yield SlurmCluster(folder)
    stopped = subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], capture_output=True, text=True)
    assert stopped.returncode == 0, stopped.stderr


@pytest.fixture()
def slurm(slurm_cluster, monkeypatch) -> SlurmCluster:
    """The cluster, with this test's environment pointing every Slurm command (sbatch through submitit too) at it."""
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    return slurm_cluster
