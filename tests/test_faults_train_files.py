"""The training log trimmed on ``--resume`` and a checkpoint's model card are written whole or not at all: a kill or a
full disk (here ``ulimit -f``) keeps the log as it was, never a torn one."""

from __future__ import annotations

import json

import pytest
from file_limits import file_size_limit

from embench.core.errors import EmbenchError


@pytest.mark.slow  # embench.train imports torch
def test_a_resume_that_cannot_rewrite_the_log_keeps_it_whole(tmp_path):
    from embench.train.run_state import trim_metrics

    log = tmp_path / "metrics.jsonl"
    text = "".join(json.dumps({"step": s, "loss": 1.0 / s, "lr": 1e-5}) + "\n" for s in range(1, 30)) + '{"step": 30, "lo'
    log.write_text(text)
    with file_size_limit(100), pytest.raises(EmbenchError, match=r"--resume: .*metrics\.jsonl: could not be written"):
        trim_metrics(log, 20)
    assert log.read_text() == text and [p.name for p in tmp_path.iterdir()] == ["metrics.jsonl"]
    trim_metrics(log, 20)  # with room: the steps after the checkpoint and the torn line are dropped
    assert [json.loads(x)["step"] for x in log.read_text().splitlines()] == list(range(1, 21))


@pytest.mark.slow  # huggingface_hub's model card
def test_a_model_card_that_cannot_be_written_keeps_the_previous_one(tmp_path):
    from embench.train.model_card import write_model_card

    (tmp_path / "README.md").write_text("the previous card\n")
    with file_size_limit(100), pytest.raises(OSError):
        write_model_card(tmp_path, final=tmp_path, meta={"method": "simcse", "base_model": "bert-base-uncased"},
                         pooling="cls", max_length=32, st_modules=None, why_not_st=None, prompt_prefix=None)
    assert (tmp_path / "README.md").read_text() == "the previous card\n" and len(list(tmp_path.iterdir())) == 1
