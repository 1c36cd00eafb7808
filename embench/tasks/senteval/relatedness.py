"""SentEval's original STS-B / SICK-R protocol: a regressor trained on frozen embeddings.

Faithful to SentEval's ``RelatednessPytorch`` (``senteval/tools/relatedness.py``) and
``SICKRelatednessEval.run``, which STSBenchmarkEval inherits:

* pairs are sorted by (tokens of A, tokens of B, score) before anything else, as SentEval does;
* features [|u - v|, u * v]; targets encoded as a distribution over the classes 1..5
  (Tai et al.'s encoding: score y puts ``y - floor(y)`` on class floor(y)+1 and
  ``floor(y) - y + 1`` on class floor(y)); STS-B's 0-5 scores go through the same encoding,
  as in SentEval;
* a linear layer + softmax, summed MSE, Adam (lr 1e-3, no weight decay), batch 64;
* training in rounds of 50 epochs; after each round the dev Pearson of ``probs @ [1..5]``
  decides: a better model is kept; otherwise a counter (never reset) stops training once it
  has reached 3; at most 1,000 epochs;
* the test prediction ``probs @ [1..5]`` is correlated with the gold scores.
Runs on CUDA when present, CPU otherwise (SentEval asserts CUDA).
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from scipy.stats import pearsonr

NCLASSES = 5


def encode_labels(scores: np.ndarray, nclass: int = NCLASSES) -> np.ndarray:
    y = np.asarray(scores, dtype=np.float64)
    floor = np.floor(y)
    out = np.zeros((len(y), nclass), dtype=np.float32)
    for i in range(nclass):
        out[:, i] += np.where(floor + 1 == i + 1, y - floor, 0.0)
        out[:, i] += np.where(floor == i + 1, floor - y + 1, 0.0)
    return out


def senteval_order(left: list[str], right: list[str], gold: np.ndarray) -> np.ndarray:
    """The permutation SentEval applies before embedding: by (len A, len B, score)."""
    keys = [(len(a.split()), len(b.split()), float(g)) for a, b, g in zip(left, right, gold, strict=True)]
    return np.array(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)


def features(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.concatenate([np.abs(a - b), a * b], axis=1).astype(np.float32)


def fit_predict(
    train_x: np.ndarray, train_y: np.ndarray, dev_x: np.ndarray, dev_scores: np.ndarray, test_x: np.ndarray,
    seed: int = 1111, device: str | None = None, max_epoch: int = 1000,
) -> tuple[float, np.ndarray]:
    """(best dev Pearson, test predictions) of SentEval's relatedness regressor."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    rng = np.random.RandomState(seed)
    # SentEval seeds torch's global RNG before it builds the layer, which reseeded the caller's: a fork of the CPU
    # generator is seeded instead (the weights are drawn there, so they are the same) and the caller's RNG kept
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(seed)  # not torch.manual_seed: that reseeds every CUDA device too
        layer = torch.nn.Linear(train_x.shape[1], NCLASSES)
    model = torch.nn.Sequential(layer, torch.nn.Softmax(dim=-1)).to(device)
    loss_fn = torch.nn.MSELoss(reduction="sum")
    opt = torch.optim.Adam(model.parameters(), weight_decay=0.0)
    tx = torch.from_numpy(train_x).to(device)
    ty = torch.from_numpy(encode_labels(train_y)).to(device)
    dx = torch.from_numpy(dev_x).to(device)
    r = torch.arange(1, NCLASSES + 1, dtype=torch.float32, device=device)

    def predict(x: torch.Tensor) -> np.ndarray:
        model.eval()
        with torch.no_grad():
            return (model(x) @ r).cpu().numpy().astype(np.float64)

    best, best_state, stale, epoch = -1.0, None, 0, 0
    while epoch <= max_epoch:
        model.train()
        for _ in range(50):
            perm = torch.from_numpy(rng.permutation(len(tx))).to(device)
            for i in range(0, len(tx), 64):
                idx = perm[i : i + 64]
                loss = loss_fn(model(tx[idx]), ty[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
        epoch += 50
        pr = pearsonr(predict(dx), dev_scores)[0]
        if pr > best:
            best, best_state = pr, copy.deepcopy(model.state_dict())
        else:
            if stale >= 3:
                break
            stale += 1
    model.load_state_dict(best_state)
    return float(best), predict(torch.from_numpy(test_x).to(device))
