"""fp16 autocast with a dynamic loss scale (``--precision fp16-mixed``, the BeLLM authors' ``--fp16 1``): the
loss is scaled before backward and the gradients unscaled before clipping, once, on the whole-batch and the
GradCache paths; an overflowed step is skipped and the scale halved, not called a divergence; the scale
goes on after a resume."""

from __future__ import annotations

import math

import pytest
import torch

from embench.train.mixed_precision import eval_dtype, grad_scaler, precision_context

pytestmark = pytest.mark.usefixtures("one_thread")


def _delta(before, trainer):
    return {k: trainer.model.state_dict()[k] - v for k, v in before.items()}


def test_the_context_and_scaler_of_each_precision():
    assert torch.get_autocast_dtype("cpu") is not None
    with precision_context("fp16-mixed", "cpu"):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float16
    with precision_context("bf16-mixed", "cpu"):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.bfloat16
    with precision_context("fp32", "cpu"):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float32
    assert grad_scaler("fp16-mixed", "cpu").is_enabled() and not grad_scaler("bf16-mixed", "cpu").is_enabled()
    assert (eval_dtype("fp16-mixed"), eval_dtype("bf16-mixed"), eval_dtype("fp32")) == ("fp16", "bf16", "fp32")


@pytest.mark.parametrize("accumulation", [1, 4])
@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_an_fp16_step_is_the_fp32_step_with_the_scale_taken_out(simcse_trainer, tmp_path, accumulation):
    ref = simcse_trainer(tmp_path / "fp32", precision="fp32")
    before = {k: v.clone() for k, v in ref.model.state_dict().items()}
    loss32, gnorm32, _ = ref.step(0)
    d32 = _delta(before, ref)
    t = simcse_trainer(tmp_path / "fp16", grad_accumulation=accumulation, precision="fp16-mixed")
    assert t.scaler.is_enabled() and t.scaler.get_scale() == 2.0**16  # torch's initial scale, before any step
    # a tiny model's gradients overflow fp16 at 2^16 (the first steps of a run are skipped until the scale fits):
    # a scale that fits, to compare one taken step
    scale = 2.0**8
    t.scaler = torch.amp.GradScaler("cpu", init_scale=scale)
    loss16, gnorm16, _ = t.step(0)
    d16 = _delta(before, t)
    # the logged norm is the unscaled one (a scale left in, or applied twice under GradCache, is 65536x off)
    assert gnorm16 == pytest.approx(gnorm32, rel=0.02) and loss16 == pytest.approx(loss32, abs=0.01)
    cos = torch.nn.functional.cosine_similarity(torch.cat([d.flatten() for d in d16.values()]),
                                                torch.cat([d.flatten() for d in d32.values()]), dim=0)
    assert cos > 0.99, float(cos)
    assert t.scaler.get_scale() == scale  # no overflow: the scale grows only after 2,000 good steps


def test_an_overflowed_fp16_step_is_skipped_and_the_scale_halved(simcse_trainer, tmp_path):
    t = simcse_trainer(tmp_path / "inf", precision="fp16-mixed")
    before = {k: v.clone() for k, v in t.model.state_dict().items()}
    p = next(q for q in t.model.parameters() if q.requires_grad)
    hook = p.register_hook(lambda g: g * float("inf"))
    _, gnorm, _ = t.step(0)  # no "diverged" stop: an fp16 overflow is what the scale is for
    hook.remove()
    assert not math.isfinite(gnorm) and t.scaler.get_scale() == 2.0**15
    assert all(torch.equal(v, t.model.state_dict()[k]) for k, v in before.items())  # the update was skipped


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_a_resumed_fp16_run_keeps_its_loss_scale(simcse_trainer, tmp_path):
    first = simcse_trainer(tmp_path / "run", max_steps=2, save_steps=1, precision="fp16-mixed")
    first.scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)  # as after overflows
    first.step(0)
    first.save_resume(1)
    scale = first.scaler.get_scale()
    again = simcse_trainer(tmp_path / "run", max_steps=2, save_steps=1, resume=True, precision="fp16-mixed")
    assert again.scaler.get_scale() == scale and scale != 2.0**16 and again.start == 1


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_an_fp16_loss_that_overflows_skips_the_step_until_it_never_stops(simcse_trainer, tmp_path, monkeypatch):
    from embench.train import step as step_module
    from embench.train.divergence import TrainingDivergedError
    from embench.train.methods.simcse import UnsupSimCSE

    t = simcse_trainer(tmp_path / "nan", precision="fp16-mixed", max_steps=4)
    real = UnsupSimCSE.objective
    monkeypatch.setattr(UnsupSimCSE, "objective", lambda self, *a: (real(self, *a)[0] * float("nan"), {}))
    before = {k: v.clone() for k, v in t.model.state_dict().items()}
    loss, _, _ = t.step(0)  # an overflow: skipped, the scale halved, no stop
    assert math.isnan(loss) and t.scaler.get_scale() == 2.0**15
    assert all(torch.equal(v, t.model.state_dict()[k]) for k, v in before.items())
    monkeypatch.setattr(step_module, "FP16_PATIENCE", 3)
    t.step(1)
    with pytest.raises(TrainingDivergedError, match="loss became nan at step 3"):
        t.step(2)
