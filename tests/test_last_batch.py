"""An epoch's last, smaller batch is trained on (the authors' loaders: HF Trainer's dataloader_drop_last=False, a plain
DataLoader); ``--set drop_last=true`` leaves it out, as embench did before, and a run started then resumes so."""

from __future__ import annotations

import json
import math

import pytest

from embench.core.errors import EmbenchError
from embench.train import Trainer, make_config, train
from embench.train.batch_order import batch_indices, epoch_order, steps_per_epoch
from embench.train.checkpoints import check_compatible
from embench.train.config import option_flag
from embench.train.distributed import DistInfo
from embench.train.previous_run import resume_or_start_afresh


def test_an_epoch_ends_with_its_smaller_last_batch_unless_drop_last():
    assert steps_per_epoch(31, 16) == 2 and steps_per_epoch(32, 16) == 2 and steps_per_epoch(31, 16, drop_last=True) == 1
    one = DistInfo()
    first, last = (batch_indices(31, 16, s, 0, one) for s in (0, 1))
    assert len(first) == 16 and len(last) == 15 and sorted(first + last) == list(range(31))  # every example, once
    assert batch_indices(31, 16, 2, 0, one) == list(epoch_order(31, 0, 1)[:16])  # the next epoch's first batch
    assert batch_indices(31, 16, 1, 0, one, drop_last=True) == list(epoch_order(31, 0, 1)[:16])  # the 15 left out
    assert option_flag("drop_last") == "--set drop_last"


def test_a_last_batch_smaller_than_the_processes_is_filled_as_distributed_sampler_does():
    """33 examples in batches of 16 over 4 processes: the last batch's one example and the epoch's first three, one
    each (torch's DistributedSampler pads with the epoch's first); every process embeds as many (the gathers)."""
    order = epoch_order(33, 7, 0)
    ranks = [batch_indices(33, 16, 2, 7, DistInfo(rank, 4, rank)) for rank in range(4)]
    assert ranks == [[order[32]], [order[0]], [order[1]], [order[2]]]
    assert [len(batch_indices(33, 16, 0, 7, DistInfo(r, 4, r))) for r in range(4)] == [4] * 4
    assert [batch_indices(2, 16, 0, 7, DistInfo(r, 4, r)) for r in range(4)] == [[i] for i in (*epoch_order(2, 7, 0),) * 2]


@pytest.mark.slow  # a set-up trainer and a run of two steps (about 2 s)
def test_31_examples_in_batches_of_16_train_two_steps_and_a_batch_of_one_has_loss_zero(tiny_bert_dir, wiki_corpus,
                                                                                       data_root, tmp_path):
    def config(out, **kw):
        return make_config(method="unsup-simcse", model=str(tiny_bert_dir), data=[str(wiki_corpus)], batch_size=16,
                           data_root=str(data_root), out=str(tmp_path / out), max_length=24, eval_steps=0,
                           progress=False, log_steps=1, warmup_ratio=0.5, **{"epochs": 2, **kw})

    t = Trainer(config("31", max_examples=31))
    t.setup()
    written = json.loads((tmp_path / "31/train_config.json").read_text())
    assert (t.per_epoch, t.total, written["resolved_total_steps"], written["warmup_steps"]) == (2, 4, 4, 2)
    old = Trainer(config("31-dropped", max_examples=31, drop_last=True))
    old.setup()
    assert (old.per_epoch, old.total, old.warmup) == (1, 2, 1)
    # 17: the second step's batch is one sentence and its own positive, a 1 x 1 logit matrix: cross-entropy 0
    r = train(config("17", max_examples=17, epochs=1))
    losses = [h["loss"] for h in r.history if "loss" in h]
    assert r.steps == 2 and len(losses) == 2 and math.isfinite(losses[0]) and losses[1] == pytest.approx(0.0, abs=1e-6)


def test_a_run_started_before_drop_last_resumes_with_its_last_batch_left_out(tmp_path):
    out = tmp_path / "old"
    (out / "checkpoint-last").mkdir(parents=True)
    (out / "checkpoint-last/state.pt").write_bytes(b"")  # resumable: checkpoints.resumable looks for the file
    (out / "train_config.json").write_text(json.dumps({"method": "unsup-simcse", "batch_size": 16}))  # no drop_last
    cfg = make_config(method="unsup-simcse", out=str(out), resume=True)
    assert cfg.drop_last is False and resume_or_start_afresh(out, cfg, say=False).drop_last is True
    (out / "train_config.json").write_text(json.dumps({"method": "unsup-simcse", "drop_last": False}))
    assert resume_or_start_afresh(out, cfg, say=False).drop_last is False  # a run of this version: as given
    with pytest.raises(EmbenchError, match="drop_last=True"):  # another batching: another run
        check_compatible({"drop_last": True}, cfg)


@pytest.mark.slow  # two runs of two steps
def test_a_finished_run_of_before_the_option_resumed_keeps_its_step_count(tiny_bert_dir, wiki_corpus, data_root,
                                                                           tmp_path):
    def run(**kw):
        return train(make_config(method="unsup-simcse", model=str(tiny_bert_dir), data=[str(wiki_corpus)],
                                 data_root=str(data_root), out=str(tmp_path / "run"), max_examples=31, batch_size=16,
                                 max_length=24, eval_steps=0, progress=False, epochs=2, save_steps=1, **kw))

    assert run(drop_last=True).steps == 2
    path = tmp_path / "run/train_config.json"
    started = json.loads(path.read_text())
    del started["drop_last"]  # as an embench before the option wrote it
    path.write_text(json.dumps(started))
    again = run(resume=True)  # the default would lay the run over 4 steps and train 2 more
    assert again.steps == 2 and again.history == []
