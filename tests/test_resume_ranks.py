"""Resuming a run of several processes: each process takes back its own random state (its dropout noise), so a
stopped and resumed run of two processes logs the losses of the uninterrupted one."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest
import torch

from embench.train import checkpoints
from embench.train.distributed import DistInfo
from embench.train.rank_rng import restore_rng_states, seed_all

pytestmark = pytest.mark.usefixtures("one_thread")


def _state_of(seed: int) -> dict:
    seed_all(seed)
    return checkpoints.rng_state()


def _saved(tmp_path, states: list[dict]) -> dict:
    """A resume state holding ``states`` as the processes' random states, written and read back as --resume reads it."""
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    checkpoints.save_resume(tmp_path, model=model, optimizer=opt, scheduler=sched, step=3, extra={}, rng_ranks=states)
    return checkpoints.load_resume(tmp_path)  # torch.load(weights_only=True): tensors and plain values only


def test_each_process_restores_its_own_random_state_from_a_checkpoint_of_as_many_processes(tmp_path):
    state = _saved(tmp_path, [_state_of(42), _state_of(43)])
    draws = {}
    for rank in (0, 1):
        seed_all(7)
        restore_rng_states(state, DistInfo(rank, 2), seed=42, step=3)
        draws[rank] = torch.rand(4)
        seed_all(42 + rank)
        assert torch.equal(draws[rank], torch.rand(4)), f"rank {rank} did not take its own state back"
    assert not torch.equal(draws[0], draws[1])


def test_another_number_of_processes_gets_a_stream_of_its_own_per_process_and_a_warning(tmp_path, caplog):
    state = _saved(tmp_path / "one", [_state_of(42)])
    draws = {}
    with caplog.at_level(logging.WARNING, logger="embench.train.rank_rng"):
        for rank in (0, 1):
            restore_rng_states(state, DistInfo(rank, 2), seed=42, step=3)
            draws[rank] = torch.rand(4)
    assert [r.getMessage() for r in caplog.records] == [  # said once, by the main process
        "--resume: the checkpoint holds the random states of 1 process(es), this run has 2: each process draws its "
        "dropout from a new stream of its own from here (the same batches; the steps do not repeat those of an "
        "uninterrupted run)"]
    assert not torch.equal(draws[0], draws[1])  # not the main process's stream in both
    seed_all(42)
    assert not torch.equal(draws[0], torch.rand(4))  # nor the first steps' noise again
    restore_rng_states(state, DistInfo(1, 2), seed=42, step=3)
    assert torch.equal(draws[1], torch.rand(4))  # the same resume, the same streams
    # two processes' checkpoint resumed by one: a warning too, not rank 0's stream taken for the whole batch
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="embench.train.rank_rng"):
        restore_rng_states(_saved(tmp_path / "two", [_state_of(42), _state_of(43)]), DistInfo(), seed=42, step=3)
    assert "holds the random states of 2 process(es), this run has 1" in caplog.text


@pytest.mark.slow  # three runs of two torchrun processes (30 to 70 s)
def test_two_processes_stopped_and_resumed_log_the_losses_of_the_uninterrupted_run(tiny_bert_dir, wiki_corpus,
                                                                                   data_root, tmp_path):
    """Each process's dropout differs (seeded seed + rank). The checkpoint held the main process's random state
    alone, restored in both: from the first step after it every loss differed (step 201: 2.1133 against 2.1389).
    The stop is a run of 2 steps resumed to 4 under a constant learning rate, so that the schedule is the same."""
    args = ["train", "--method", "unsup-simcse", "--batch-size", "16", "--max-length", "24", "--eval-steps", "0",
            "--device", "cpu", "--set", "log_steps=1", "--set", "lr_schedule=constant", "--save-steps", "2", "-q",
            "-m", str(tiny_bert_dir), "--train-data", str(wiki_corpus), "--data", str(data_root)]
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "embench.cli"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for out, extra in (("full", ["--max-steps", "4"]), ("cut", ["--max-steps", "2"]), ("cut", ["--max-steps", "4", "--resume"])):
        done = subprocess.run([*torchrun, *args, *extra, "--out", str(tmp_path / out)], env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, (out, extra, done.stderr[-3000:])

    def losses(out):
        return [json.loads(x)["loss"] for x in (tmp_path / out / "metrics.jsonl").read_text().splitlines() if '"loss"' in x]

    assert len(losses("full")) == 4
    assert losses("cut") == losses("full")
