"""The next step's texts tokenized while the device runs this step's backward (``step.pretokenize_next``): the
steps are the same to the bit, every pass of a later step finds its texts tokenized, tokens are counted once."""

from __future__ import annotations

import pytest
import torch

from embench.train import step as step_module
from embench.train.module import SentenceModel

pytestmark = pytest.mark.usefixtures("one_thread")


def _run(simcse_trainer, out, monkeypatch, *, ahead: bool, steps: int = 3, **kw):
    """``steps`` steps with dropout on (its random stream must be untouched); which passes found their texts ready."""
    found: list[bool] = []
    tokenize = SentenceModel.tokenize

    def watched(self, texts):
        found.append(tuple(texts) in self._ready)
        return tokenize(self, texts)

    with monkeypatch.context() as m:
        m.setattr(SentenceModel, "tokenize", watched)
        if not ahead:
            m.setattr(step_module, "pretokenize_next", lambda t, step: None)
        t = simcse_trainer(out, max_steps=steps, dropout=0.1, batch_size=8, **kw)
        losses = [t.step(i)[0] for i in range(steps)]
    weights = {n: p.detach().clone() for n, p in t.model.named_parameters()}
    return losses, weights, found, t


@pytest.mark.parametrize("micro_batches", [1, 2])
def test_tokenizing_ahead_changes_no_step_and_every_later_pass_finds_its_texts(simcse_trainer, tmp_path, monkeypatch,
                                                                                micro_batches):
    kw = {"grad_accumulation": micro_batches}
    losses, weights, found, t = _run(simcse_trainer, tmp_path / "ahead", monkeypatch, ahead=True, **kw)
    base_losses, base_weights, base_found, base = _run(simcse_trainer, tmp_path / "plain", monkeypatch, ahead=False, **kw)
    assert losses == base_losses  # bit for bit: the same texts, order and dropout masks
    for name, w in base_weights.items():
        assert torch.equal(weights[name], w), name
    # passes a step: one, or GradCache's two per micro-batch (without gradients, then with them)
    per_step = 1 if micro_batches == 1 else 2 * micro_batches
    assert len(found) == len(base_found) == 3 * per_step
    assert found == [False] * per_step + [True] * 2 * per_step  # the first step had no step before it
    assert not any(base_found)
    assert t.model.tokens == base.model.tokens > 0  # real tokens counted once per pass with gradients
    assert t.model.padded_tokens == base.model.padded_tokens >= t.model.tokens


def test_texts_not_foreseen_are_tokenized_as_before(simcse_trainer, tmp_path):
    t = simcse_trainer(tmp_path / "run", max_steps=2, batch_size=4)
    model = t.model
    model.pretokenize([["a sentence that the next pass will not ask for"]])
    enc = model.tokenize(["another sentence", "and a second one"])
    assert enc["input_ids"].shape[0] == 2
    expected = model.tokenizer(["another sentence", "and a second one"], padding=True, return_tensors="pt")
    assert torch.equal(enc["input_ids"], expected["input_ids"])
