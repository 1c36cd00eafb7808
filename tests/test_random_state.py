"""embench leaves its caller's random numbers where they were, and its seeded steps draw what they drew.

``torch.manual_seed(123); embench.evaluate(tiny, tasks=["SICK-R"], scoring="regressor"); torch.rand(1)`` gave 0.1177
instead of 0.2961: SentEval's regressor (and, on a GPU, the transfer classifiers) seeded torch's global generator, and
mteb seeds Python's, numpy's and torch's with its 42 whenever it builds a task or an evaluator.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

import embench
from embench.core.random_state import kept_random_state
from embench.tasks.senteval.fits import init_linear
from embench.tasks.senteval.relatedness import fit_predict


def _draws() -> tuple[float, float, float]:
    return random.random(), float(np.random.rand()), float(torch.rand(1))


def _seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@pytest.fixture
def cuda_seeds(monkeypatch):
    """Every seed given to the CUDA generators (torch.manual_seed passes it on, even where CUDA is not yet started)."""
    calls: list[int] = []
    monkeypatch.setattr(torch.cuda, "manual_seed_all", calls.append)
    return calls


def _data(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    x = rng.normal(size=(n, 8)).astype(np.float32)
    return x, np.clip(1 + 4 * (x[:, 0] > 0) * rng.random(n) + x[:, 1].clip(0, 1), 1, 5)


@pytest.mark.slow
def test_the_regressor_keeps_the_callers_generators_and_gives_the_scores_it_gave(cuda_seeds, one_thread):
    rng = np.random.default_rng(0)
    (tx, ty), (dx, dy), (sx, _) = _data(rng, 64), _data(rng, 32), _data(rng, 8)
    _seed_all(123)
    expected = _draws()
    _seed_all(123)
    cuda_seeds.clear()
    best, predictions = fit_predict(tx, ty, dx, dy, sx, seed=7, device="cpu", max_epoch=0)
    assert _draws() == expected and cuda_seeds == []
    # what it gave when it seeded torch's global generator (torch.manual_seed(7) before building its layer)
    assert best == 0.6412211706130917
    assert predictions.tolist() == [3.0368218421936035, 3.3778607845306396, 2.9511072635650635, 3.2733354568481445,
                                    2.902937412261963, 3.594113826751709, 3.221161365509033, 3.037855625152588]


def test_a_classifiers_first_weights_are_senteval_s_and_no_generator_is_reseeded(cuda_seeds):
    torch.manual_seed(5)
    layer = torch.nn.Linear(6, 3)  # SentEval: torch.manual_seed(seed), then the layer
    _seed_all(123)
    expected = _draws()
    _seed_all(123)
    cuda_seeds.clear()
    w, b = init_linear(6, 3, 5)
    assert _draws() == expected and cuda_seeds == []  # on a GPU torch.manual_seed reseeded the caller's CUDA generator
    assert torch.equal(w, layer.weight.detach().T) and torch.equal(b, layer.bias.detach())


class Reseeding:
    """An object encoder that seeds every global generator, as mteb does when it builds a task or an evaluator."""

    fingerprint = "reseeding"

    def encode(self, texts, **kw):
        _seed_all(42)
        return np.random.default_rng(len(texts)).standard_normal((len(texts), 8)).astype(np.float32)


@pytest.mark.slow
def test_a_call_of_the_api_keeps_the_callers_generators_whatever_runs_inside(data_root, tmp_path):
    _seed_all(123)
    expected = _draws()
    _seed_all(123)
    ev = embench.evaluate(Reseeding(), tasks=["STS13"], data=data_root, results_dir=tmp_path, use_cache=False, progress=False)
    assert ev.records and _draws() == expected
    _seed_all(9)
    expected = _draws()
    _seed_all(9)
    with kept_random_state():  # the block's own seeds and draws are its own
        _seed_all(7)
        _draws()
    assert _draws() == expected


@pytest.mark.slow
def test_an_evaluation_during_training_leaves_the_training_stream_as_it_was(monkeypatch, tmp_path, data_root):
    """mteb seeds every generator with 42 when it builds a task: under `embench train` (no outermost Python call to
    restore them) an evaluation changed the dropout masks and batch order after it, so the command line trained
    another model than embench.train.train of the same config."""
    from types import SimpleNamespace

    import torch

    import embench.models.loader as loader
    from embench.data.root import DataRoot
    from embench.train.callbacks import Evaluator

    monkeypatch.setattr(loader, "load_model", lambda *a, **k: "encoder")

    def reseeding_task(self, enc, spec):
        torch.manual_seed(42)  # what mteb does
        return 0.5

    monkeypatch.setattr(Evaluator, "_task", reseeding_task)
    evaluator = Evaluator(["STSBenchmark-dev"], [], DataRoot.resolve(str(data_root)), tmp_path, batch_size=8,
                          max_length=16, dtype="fp32")
    model = SimpleNamespace(encoder=None, tokenizer=None, pooling="mean", prompt=None, device="cpu", training=True,
                            train=lambda mode=True: None)
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    assert evaluator(model, 10) == {"STSBenchmark-dev": 0.5}
    assert torch.equal(torch.rand(3), expected)
