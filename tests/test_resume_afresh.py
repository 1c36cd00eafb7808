"""A run stopped before its first resume checkpoint: Ctrl-C says there is nothing to continue from, and --resume
starts that run again (with a note) instead of failing on the missing state, as a seed of --seeds does."""

from __future__ import annotations

import json
import sys

import pytest

from embench.core.errors import EmbenchError
from embench.train import make_config


def _partial_run(out):
    """What a run stopped at step 3 of 500 leaves: its config and metrics, no checkpoint-last/state.pt."""
    out.mkdir(parents=True)
    (out / "train_config.json").write_text(json.dumps({"method": "unsup-simcse", "model": "m", "drop_last": False}))
    (out / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in (1, 2, 3)))
    (out / "notes.txt").write_text("mine")


def test_resume_with_no_checkpoint_yet_starts_the_run_again_with_a_note(tmp_path, caplog):
    from embench.train.previous_run import clear_or_refuse, resume_or_start_afresh

    out = tmp_path / "run"
    _partial_run(out)
    cfg = make_config(method="unsup-simcse", model="m", out=str(out), resume=True)
    with caplog.at_level("WARNING"):
        fresh = resume_or_start_afresh(out, cfg)
    assert (fresh.resume, fresh.overwrite) == (False, True)
    assert "no resume checkpoint yet" in caplog.text and "starts from step 0" in caplog.text
    assert "train_config.json, metrics.jsonl" in caplog.text
    clear_or_refuse(out, fresh)  # the folder check then clears that run's outputs, and only those
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    # nothing there at all: a new run, nothing to clear
    assert resume_or_start_afresh(tmp_path / "new", cfg).overwrite is False
    # a plain rerun is refused, saying there is nothing to resume and both ways to start it again
    _partial_run(tmp_path / "again")
    with pytest.raises(EmbenchError, match=r"no resume checkpoint \(checkpoint-last/state.pt\) to continue from: start "
                                           r"it again with --overwrite or --resume"):
        clear_or_refuse(tmp_path / "again", make_config(method="unsup-simcse", model="m"))


def test_resume_with_a_checkpoint_or_a_seed_group_is_left_alone(tmp_path):
    from embench.train.previous_run import resume_or_start_afresh

    out = tmp_path / "run"
    _partial_run(out)
    (out / "checkpoint-last").mkdir()
    (out / "checkpoint-last" / "state.pt").write_bytes(b"")
    cfg = make_config(method="unsup-simcse", model="m", out=str(out), resume=True)
    assert resume_or_start_afresh(out, cfg) is cfg  # resume_state reads (or names) that state
    group = tmp_path / "group"
    (group / "seed-1").mkdir(parents=True)
    (group / "seeds.json").write_text("{}")
    with pytest.raises(EmbenchError, match="holds a seed group .*continue it with the same --seeds and --resume"):
        resume_or_start_afresh(group, cfg)


@pytest.mark.slow  # the trainer's imports
def test_ctrl_c_before_the_first_checkpoint_says_there_is_nothing_to_continue_from(tmp_path, data_root, tiny_bert_dir,
                                                                                   monkeypatch, capsys):
    import importlib

    import embench.cli.output as output
    from embench.train.trainer import Trainer

    cli = importlib.import_module("embench.cli.app")
    out = tmp_path / "run"

    def stop(self):
        raise KeyboardInterrupt

    def said():
        monkeypatch.setattr(output, "_interrupt_said", [])
        monkeypatch.setattr(sys, "argv", ["embench", "train", "--method", "unsup-simcse", "-m", str(tiny_bert_dir),
                                          "--train-data", "corpora", "--data", str(data_root), "--out", str(out),
                                          "--eval-steps", "0", "-q"])
        with pytest.raises(SystemExit) as done:
            cli.main()
        assert done.value.code == 130
        return " ".join(capsys.readouterr().err.split())

    monkeypatch.setattr(Trainer, "fit", stop)
    err = said()
    assert f"interrupted before the first resume checkpoint {out}/checkpoint-last (written every 500 steps: " in err
    assert "nothing to continue from; the same command with --resume (or --overwrite) starts the run again" in err
    (out / "checkpoint-last").mkdir(parents=True)
    (out / "checkpoint-last" / "state.pt").write_bytes(b"")
    assert f"run the same command with --resume to continue from {out}/checkpoint-last" in said()


@pytest.mark.slow
def test_resume_of_a_run_stopped_before_its_first_checkpoint_trains_it_from_step_0(tmp_path, data_root, tiny_bert_dir,
                                                                                  caplog):
    from embench.train import train

    out = tmp_path / "run"
    _partial_run(out)
    with caplog.at_level("WARNING"):
        r = train(make_config(method="crop", model=str(tiny_bert_dir), data=["20newsgroups"], data_root=str(data_root),
                              out=str(out), batch_size=8, max_length=32, max_examples=200, log_steps=1, eval_steps=0,
                              max_steps=2, progress=False, resume=True))
    assert r.best_step == 2 and "nothing to continue from" in caplog.text
    assert [json.loads(x)["step"] for x in (out / "metrics.jsonl").read_text().splitlines()] == [1, 2]
    assert (out / "notes.txt").read_text() == "mine"
