"""Intra-sentence token dependency (BeLLM Section 2, Figure 2: the pilot analysis).

For each STS-B test sentence: the Spearman correlation, across hidden dimensions, between the
pivot token's vector and each other token's vector, averaged over the other tokens; one value per
sentence, shown as box plots per model. BeLLM uses the [CLS] pivot for BERT and the last token
(after Ethayarajh 2019) for decoder LLMs. Open choices, with defaults: the last hidden layer
(``layer``); pivot ``auto`` = the last real token for a model pooled by its last token (decoders), else the
first, as cls-energy and attention choose it;
special tokens other than the pivot do not count (``include_special=True`` counts them); both
sentences of every pair, each once.

The ``stack`` column says what the layer read is: ``main``, the model's layer stack; for a decoder in a BeLLM
sum mode (``--bidirectional-mode sum``/``sum-code``) its last layer is ``main + bidirectional branch``: the
final norm of the causal stack's output plus the bidirectional branch's, the states the model pools (the
layers below it are the causal stack's alone).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from ..core.errors import EmbenchError
from ..report import style
from .attention import pivot_of
from .base import AnalysisResult, analysis
from .inputs import stsb, unique, write_csv
from .token_pass import BRANCH, MAIN, TokenRequest, branch_layers


def spearman_rows(pivot: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Spearman correlation of ``pivot`` (d,) with each row of ``others`` (n, d), across the d dimensions."""
    rp = rankdata(pivot)
    ro = rankdata(others, axis=1)
    rp = rp - rp.mean()
    ro = ro - ro.mean(axis=1, keepdims=True)
    return (ro @ rp) / np.maximum(np.linalg.norm(ro, axis=1) * np.linalg.norm(rp), 1e-12)


def sentence_dependency(states: np.ndarray, pivot: int, keep: list[int]) -> float:
    """Mean Spearman between the pivot token and the tokens at positions ``keep`` (pivot excluded)."""
    others = [p for p in keep if p != pivot]
    if not others:
        return float("nan")
    return float(spearman_rows(states[pivot], states[others]).mean())


@analysis("token-dependency")
def token_dependency(refs, ctx, out, pivot: str = "auto", layer: int | None = None, include_special: bool = False,
                     split: str = "test", text: str = "senteval", limit: int | None = None, seed: int = 42,
                     batch_size: int = 32) -> AnalysisResult:
    """BeLLM Figure 2: the distribution over sentences of pivot-to-token Spearman correlation, per model."""
    if pivot not in ("auto", "first", "last"):
        raise EmbenchError(f"invalid --pivot {pivot!r}; choose auto, first (e.g. [CLS]) or last (last real token)")
    pairs = stsb(ctx.root, split, text)
    corpus = unique(pairs.left + pairs.right)
    if limit is not None and limit < len(corpus):
        rng = np.random.default_rng(seed)
        corpus = [corpus[i] for i in sorted(rng.choice(len(corpus), limit, replace=False))]
    found: dict[str, dict[str, float]] = {}  # model -> sentence -> its dependency
    requests, settings = [], {}
    for ref in refs:
        encoder = ref.encoder()
        which = pivot if pivot != "auto" else pivot_of(encoder)  # as cls-energy and attention: by the pooling used
        special = set(getattr(encoder.tokenizer, "all_special_ids", []) or [])
        n = encoder.num_layers
        li = n if layer is None else (layer + n + 1 if layer < 0 else layer)
        if not 0 <= li <= n:
            raise EmbenchError(f"--layer {layer} is out of range for {ref.label}: layers 0 to {n}")
        settings[ref.label] = (which, li, f"{MAIN} + {BRANCH}" if li == n and branch_layers(encoder.model) else MAIN)

        def consume(tb, rows, label=ref.label, which=which, li=li, special=special):
            hs = tb.hidden_states[li].float().cpu().numpy()
            mask = tb.enc["attention_mask"].cpu().numpy().astype(bool)
            ids = tb.enc["input_ids"].cpu().numpy()
            for i in rows:
                real = np.flatnonzero(mask[i]).tolist()
                p = real[0] if which == "first" else real[-1]
                keep = [q for q in real if include_special or ids[i, q] not in special]
                found.setdefault(label, {})[tb.texts[i]] = sentence_dependency(hs[i], p, keep)

        requests.append(TokenRequest(encoder, corpus, consume, batch_size=batch_size))
    yield requests
    frames = [pd.DataFrame({"model": ref.label, "sentence": corpus, "spearman": [found[ref.label][t] for t in corpus],
                            "pivot": settings[ref.label][0], "layer": settings[ref.label][1], "stack": settings[ref.label][2]})
              for ref in refs]
    frame = pd.concat(frames, ignore_index=True)
    summary = frame.groupby("model", sort=False)["spearman"].agg(["mean", "median", "std", "count"]).reset_index()
    files = [write_csv(frame, out, "token_dependency"), write_csv(summary, out, "token_dependency_summary")]
    with style.paper_style():
        import seaborn as sns

        fig, axes = style.figure(width=max(2.4, 1.1 * len(refs) + 1.0))
        ax = axes[0, 0]
        sns.boxplot(data=frame, x="model", y="spearman", hue="model", palette=style.palette(len(refs)), ax=ax,
                    fliersize=1, linewidth=0.8, legend=False, showmeans=True,
                    meanprops={"marker": "D", "markerfacecolor": "white", "markeredgecolor": "black", "markersize": 3})
        ax.set_xticks(range(len(summary)), [f"{m}\nmean {v:.2f}" for m, v in zip(summary["model"], summary["mean"], strict=True)])
        ax.set_xlabel("")
        ax.set_ylabel("pivot-token Spearman (per sentence)")
        files += style.save(fig, out, "token_dependency")
    return AnalysisResult("token-dependency", {"token_dependency": frame, "token_dependency_summary": summary}, files)
