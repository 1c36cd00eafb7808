"""An interrupt (Ctrl-C, SIGTERM) during a write that must not be broken lands when the write ends: the resume
state is whole and the run stops with the interrupt, not with torch.save's own error about a torn zip file."""

from __future__ import annotations

import signal

import pytest
import torch

from embench.core.signals import interrupts_held
from embench.train import checkpoints


def test_a_held_signal_reaches_its_handler_once_after_the_block():
    seen: list[int] = []
    before = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        with interrupts_held():
            signal.raise_signal(signal.SIGTERM)
            signal.raise_signal(signal.SIGTERM)
            assert seen == []  # held while the block runs
        assert seen == [signal.SIGTERM]
        signal.raise_signal(signal.SIGTERM)  # the process's handler is back
        assert seen == [signal.SIGTERM, signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, before)


def test_ctrl_c_during_the_resume_state_write_leaves_a_whole_file_then_interrupts(tmp_path, monkeypatch):
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters())
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    save = torch.save

    def interrupted_save(obj, fh):  # Ctrl-C arrives while the file is being written
        signal.raise_signal(signal.SIGINT)
        save(obj, fh)

    monkeypatch.setattr(torch, "save", interrupted_save)
    # Ctrl-C as an interactive process has it (KeyboardInterrupt): a shell starts a background job with SIGINT
    # ignored, Python keeps it so, and held signals go back to the handler the process had
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            checkpoints.save_resume(tmp_path / "resume", model=model, optimizer=optimizer, scheduler=scheduler, step=7,
                                    extra={})
    finally:
        signal.signal(signal.SIGINT, before)
    state = torch.load(tmp_path / "resume" / "state.pt", weights_only=True)
    assert state["step"] == 7 and torch.equal(state["model"]["weight"], model.weight.detach())
    assert (tmp_path / "resume" / "step.json").is_file()
