"""`srun --ntasks N embench train`: rank, world size and the rendezvous read from Slurm's variables (no cluster
needed here; tests/test_slurm_train.py trains across real Slurm tasks)."""

from __future__ import annotations

import pytest
from submitit.slurm.slurm import _parse_node_list

from embench.train.distributed import first_host, slurm_port, torch_env_from_slurm

# what srun put into each task of `srun --ntasks 2` in job 812 on the test cluster (one node, vm)
SRUN = {"SLURM_JOB_ID": "812", "SLURM_STEP_ID": "0", "SLURM_NTASKS": "2", "SLURM_STEP_NUM_TASKS": "2",
        "SLURM_JOB_NODELIST": "vm", "SLURM_STEP_NODELIST": "vm", "SLURM_NODELIST": "vm"}


@pytest.mark.parametrize("nodelist", ["vm", "node[001-004,007]", "a[1-3],b[5]", "gpu-[12-14]-ib",
                                      "rack[1-2]-node[01-04]", "x1,x2", "n[3,1]", "c7"])
def test_the_first_host_of_a_node_list_is_submitits(nodelist):
    assert first_host(nodelist) == _parse_node_list(nodelist)[0]


def test_each_task_of_a_step_gets_its_rank_and_the_same_rendezvous():
    envs = [torch_env_from_slurm({**SRUN, "SLURM_PROCID": str(r), "SLURM_LOCALID": str(r)}) for r in (0, 1)]
    assert [e["RANK"] for e in envs] == ["0", "1"] and [e["LOCAL_RANK"] for e in envs] == ["0", "1"]
    assert {e["WORLD_SIZE"] for e in envs} == {"2"} and {e["MASTER_ADDR"] for e in envs} == {"vm"}
    assert {e["MASTER_PORT"] for e in envs} == {str(slurm_port(812, 0))}


def test_rank_zero_listens_on_the_first_node_of_a_multi_node_step():
    env = torch_env_from_slurm({**SRUN, "SLURM_PROCID": "5", "SLURM_LOCALID": "1", "SLURM_NTASKS": "8",
                                "SLURM_STEP_NUM_TASKS": "8", "SLURM_STEP_NODELIST": "gpu[07-10]",
                                "SLURM_JOB_NODELIST": "gpu[07-10]"})
    assert env["MASTER_ADDR"] == "gpu07" and env["RANK"] == "5" and env["LOCAL_RANK"] == "1" and env["WORLD_SIZE"] == "8"


def test_ports_differ_between_steps_and_between_nearby_jobs_and_stay_in_range():
    ports = {slurm_port(job, step) for job in range(1000, 1100) for step in range(4)}
    assert len(ports) == 400 and all(20000 <= p < 60000 for p in ports)


def test_master_port_and_address_given_by_the_user_win():
    env = torch_env_from_slurm({**SRUN, "SLURM_PROCID": "0", "MASTER_PORT": "29512", "MASTER_ADDR": "10.0.0.1"})
    assert env["MASTER_PORT"] == "29512" and env["MASTER_ADDR"] == "10.0.0.1"


@pytest.mark.parametrize("env", [
    {"SLURM_JOB_ID": "9", "SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_NODELIST": "vm"},  # the batch script itself
    {**SRUN, "SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_STEP_NUM_TASKS": "1"},  # a one-task step (submitit's jobs)
    {**SRUN, "SLURM_PROCID": "0", "WORLD_SIZE": "4", "RANK": "0"},  # torchrun inside srun: torchrun's variables stand
    {},  # no Slurm at all
])
def test_no_process_group_is_made_up_outside_a_step_of_several_tasks(env):
    assert torch_env_from_slurm(env) == {}


def test_a_step_without_a_node_list_says_what_to_set():
    from embench.core.errors import EmbenchError

    env = {k: v for k, v in SRUN.items() if "NODELIST" not in k}
    with pytest.raises(EmbenchError, match="MASTER_ADDR and MASTER_PORT"):
        torch_env_from_slurm({**env, "SLURM_PROCID": "0"})
