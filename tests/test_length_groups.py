"""A step split into micro-batches groups its examples by length (``step.grouped_by_length``): less padding,
the update of the whole batch all the same (GradCache: the objective sees every row, in whatever order)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from embench.train.accumulation import merge
from embench.train.length_groups import text_groups
from embench.train.methods.base import Method
from embench.train.methods.crop import Crop
from embench.train.step import grouped_by_length, step_batches, step_text_groups

pytestmark = pytest.mark.usefixtures("one_thread")


def test_grouping_is_a_stable_sort_by_length_and_unknown_lengths_keep_the_order():
    assert grouped_by_length([5, 1, 5, 3], [10, 11, 12, 13]) == [11, 13, 10, 12]
    assert grouped_by_length(None, [10, 11, 12]) == [10, 11, 12]


def test_an_examples_length_is_its_longest_texts():
    lengths = Method.example_lengths
    assert lengths(None, ["a", "abc", "ab"], [1, 0]) == [3, 1]
    assert lengths(None, [("a", "abcd", "ab"), ("abc", "a", "a")], [0, 1]) == [4, 3]  # a triplet: its longest text
    assert lengths(None, [{"text": "a"}], [0]) is None  # a kind of example it does not know: not grouped
    assert Crop.example_lengths(None, ["a document"], [0]) is None  # crops are drawn in batch()


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_a_split_step_pads_less_and_gives_the_update_of_the_whole_batch(simcse_trainer, tmp_path):
    def run(out, **kw):
        t = simcse_trainer(out, batch_size=32, **kw)
        loss = t.step(0)[0]
        grads = {n: p.grad.detach().clone() for n, p in t.model.named_parameters() if p.requires_grad}
        return t, loss, grads

    whole, loss, grads = run(tmp_path / "whole")
    grouped, loss_g, grads_g = run(tmp_path / "grouped", grad_accumulation=4)
    ordered, loss_o, _ = run(tmp_path / "ordered", grad_accumulation=4, group_by_length=False)
    assert loss_g == pytest.approx(loss, rel=1e-5) and loss_o == pytest.approx(loss, rel=1e-5)
    for name, g in grads.items():
        torch.testing.assert_close(grads_g[name], g, rtol=1e-4, atol=1e-7, msg=lambda m, name=name: f"{name}: {m}")
    # the same examples, fewer padded tokens: each micro-batch pads to a length near its own texts'
    assert grouped.model.tokens == ordered.model.tokens == whole.model.tokens
    assert grouped.model.padded_tokens < ordered.model.padded_tokens
    texts = [sorted(t for b in step_batches(x, 0) for t in b.texts["anchor"]) for x in (grouped, ordered)]
    assert texts[0] == texts[1]


def test_text_groups_take_the_longest_first_within_the_budget_of_an_even_split():
    # 6 texts in 3 parts: a budget of ceil(6 / 3) = 2 texts at the longest length, 10 tokens: 20 padded tokens a pass
    assert text_groups([3, 10, 5, 10, 2, 4], 3) == [[1, 3], [2, 5, 0, 4]]  # 2 x 10 and 4 x 5 tokens: 40 for 34 real
    assert text_groups([7, 7, 7, 7], 2) == [[0, 1], [2, 3]]  # equal lengths: the even split
    assert text_groups([4], 3) == [[0]]
    assert text_groups([3, 10, 5, 10, 2, 4], 4, even=True) == [[1, 3], [2, 5], [0], [4]]  # DDP: 4 passes on every rank


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_a_split_step_is_cut_by_text_unless_the_method_embeds_otherwise(simcse_trainer, tmp_path):
    t = simcse_trainer(tmp_path / "plain", batch_size=16, grad_accumulation=4)
    batches = step_batches(t, 0)
    groups = step_text_groups(t, 0, batches)
    texts = t.method.pass_texts(merge(batches))
    assert sorted(i for g in groups for i in g) == list(range(len(texts)))  # every text once
    lengths = t.model.token_lengths(texts)
    assert all(len(g) * max(lengths[i] for i in g) <= 8 * max(lengths) for g in groups)  # within 32 texts / 4 parts
    assert [lengths[i] for g in groups for i in g] == sorted(lengths, reverse=True)
    # an auxiliary MLM loss comes out of each micro-batch's own forward: its examples stay together
    mlm = simcse_trainer(tmp_path / "mlm", batch_size=16, grad_accumulation=4, mlm_weight=0.1)
    assert not mlm.method.splits_by_text() and step_text_groups(mlm, 0, step_batches(mlm, 0)) is None
    ordered = simcse_trainer(tmp_path / "ordered", batch_size=16, grad_accumulation=4, group_by_length=False)
    assert step_text_groups(ordered, 0, step_batches(ordered, 0)) is None
    assert step_text_groups(simcse_trainer(tmp_path / "one", batch_size=16), 0, [batches[0]]) is None


@pytest.mark.slow  # two torchrun processes (about 20 s)
@pytest.mark.parametrize("split", [["--grad-accumulation", "4"], ["--set", "bucket_tokens=40", "--gradient-checkpointing"]],
                         ids=["by-text", "buckets-checkpointed"])
def test_two_processes_cut_a_split_step_by_text_into_as_many_passes_and_match_one_process(tiny_bert_dir, wiki_corpus,
                                                                                          data_root, tmp_path, split):
    """Under DDP every process runs as many passes as micro-batches, cut by text all the same (the same sequence of
    DDP forwards in each process; a token budget's number of passes follows each process's own texts); and one pass
    in length buckets, recomputed in backward, is one DDP forward however many buckets each process makes."""
    args = ["train", "--method", "unsup-simcse", "--batch-size", "16", "--max-length", "24", "--max-steps", "3", *split,
            "--eval-steps", "0", "--device", "cpu", "--set", "dropout=0", "--set", "log_steps=1",
            "-q", "-m", str(tiny_bert_dir), "--train-data", str(wiki_corpus), "--data", str(data_root)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    runs = {"two": [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m",
                    "embench.cli", *args, "--out", str(tmp_path / "two")],
            "one": [sys.executable, "-m", "embench.cli", *args, "--out", str(tmp_path / "one")]}
    for name, cmd in runs.items():
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (name, done.stderr[-3000:])

    def losses(out):
        return [json.loads(x)["loss"] for x in (out / "metrics.jsonl").read_text().splitlines() if '"loss"' in x]

    assert len(losses(tmp_path / "two")) == 3
    assert losses(tmp_path / "two") == pytest.approx(losses(tmp_path / "one"), abs=1e-5)
