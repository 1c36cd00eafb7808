"""A LoRA run whose checkpoint is the adapter alone holds its frozen base weights in the autocast dtype: the
same step as fp32 bases under autocast (autocast rounds them to bf16 at every matmul anyway), half their
memory; embeddings, norms and the adapters stay fp32; the run evaluates and its adapter loads back."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from embench.train import Trainer, make_config
from embench.train.frozen_weights import hold_frozen_weights
from embench.train.methods.bellm import BeLLM

pytestmark = pytest.mark.usefixtures("one_thread")


def _triplets(tmp_path):
    path = tmp_path / "nli.csv"
    rows = [("A man plays a guitar.", "A person makes music.", "Nobody is playing."),
            ("Two dogs run in snow.", "Animals are outside.", "The dogs sleep inside.")] * 4
    path.write_text("sent0,sent1,hard_neg\n" + "\n".join(",".join(r) for r in rows) + "\n")
    return path


def _bellm(tiny_llama_dir, data_root, data, out, **kw):
    t = Trainer(make_config(method="bellm", model=str(tiny_llama_dir), data=[str(data)], data_root=str(data_root),
                            out=str(out), max_steps=1, batch_size=8, max_length=24, lora_r=4, lora_dropout=0.0,
                            precision="bf16-mixed", progress=False, eval_steps=0, **kw))
    t.setup()
    return t


def test_only_frozen_linear_weights_change_dtype():
    model = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 4), nn.LayerNorm(4), nn.Linear(4, 2))
    model[0].weight.requires_grad_(False)
    model[1].requires_grad_(False)  # frozen: weight and bias
    freed = hold_frozen_weights(model, "bf16-mixed")
    assert freed == 16 * 2  # 16 fp32 values now 2 bytes each
    assert model[1].weight.dtype == torch.bfloat16 and model[1].bias.dtype == torch.float32
    assert model[0].weight.dtype == model[2].weight.dtype == model[3].weight.dtype == torch.float32
    assert hold_frozen_weights(model, "fp32") == 0
    assert hold_frozen_weights(nn.Sequential(nn.Linear(4, 4).requires_grad_(False)), "fp16-mixed") == 32


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sum", "billm"])
def test_the_step_equals_fp32_bases_under_autocast(tiny_llama_dir, data_root, tmp_path, monkeypatch, mode):
    data = _triplets(tmp_path)
    held = _bellm(tiny_llama_dir, data_root, data, tmp_path / "held", bidirectional_mode=mode)
    dtypes = {n: p.dtype for n, p in held.model.named_parameters()}
    assert all(d == torch.bfloat16 for n, d in dtypes.items() if n.endswith("base_layer.weight"))
    assert all(d == torch.float32 for n, d in dtypes.items() if "lora_" in n or "norm" in n or "embed" in n)
    monkeypatch.setattr(BeLLM, "exports_adapter_alone", False)  # as a merged export would: fp32 bases
    plain = _bellm(tiny_llama_dir, data_root, data, tmp_path / "plain", bidirectional_mode=mode)
    assert all(p.dtype == torch.float32 for p in plain.model.parameters())
    loss_held, gnorm_held, _ = held.step(0)
    loss_plain, gnorm_plain, _ = plain.step(0)
    assert loss_held == loss_plain and gnorm_held == pytest.approx(gnorm_plain, rel=1e-6)
    trained = {n: p for n, p in plain.model.named_parameters() if p.requires_grad}
    worst = max(float((p - dict(held.model.named_parameters())[n]).abs().max()) for n, p in trained.items())
    assert worst < 1e-7, worst


@pytest.mark.slow
def test_a_held_run_evaluates_and_its_adapter_loads_back(tiny_llama_dir, data_root, tmp_path):
    import numpy as np

    import embench

    data = _triplets(tmp_path)
    t = Trainer(make_config(method="bellm", model=str(tiny_llama_dir), data=[str(data)], data_root=str(data_root),
                            out=str(tmp_path / "run"), max_steps=2, batch_size=8, max_length=24, lora_r=4,
                            precision="bf16-mixed", progress=False, eval_steps=2, eval_tasks=["STS12"]))
    r = t.fit()
    assert r.best_score is not None and np.isfinite(r.best_score)
    loaded = embench.load_model(r.best_dir)
    v = loaded.encode_batch(["A man plays a guitar."])
    assert v.shape == (1, 32) and np.isfinite(v).all()
