"""SimCSE's MLP head starts as the authors' code draws it (simcse/models.py cl_init -> init_weights): weights from
N(0, initializer_range = 0.02), biases zero; not torch's default Linear init (uniform: std 1/sqrt(3 h), 0.10 for
this tiny model's h = 32, and biases up to 1/sqrt(h))."""

from __future__ import annotations

import pytest
import torch

from embench.train import METHODS, make_config, resolve


@pytest.mark.parametrize(("mlp", "pooling"), [("train", "cls_before_pooler"), ("keep", "cls")])
def test_the_mlp_head_starts_from_bert_s_initialisation(tiny_bert_dir, mlp, pooling):
    cfg = resolve(make_config(method="unsup-simcse", model=str(tiny_bert_dir), mlp=mlp, pooling=pooling, max_length=16,
                              device="cpu"))
    torch.manual_seed(0)
    model = METHODS.get("unsup-simcse")(cfg).build("cpu")
    linear = model.head[0] if mlp == "train" else model.encoder.pooler.dense
    assert linear.weight.shape == (32, 32)
    assert 0.018 < float(linear.weight.std()) < 0.022 and abs(float(linear.weight.mean())) < 0.003
    assert torch.count_nonzero(linear.bias) == 0
