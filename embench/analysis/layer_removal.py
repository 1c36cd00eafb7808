"""STS against the number of layers kept, layers removed from the top (BeLLM's degradation experiment, Figure 4).

Keeping the first N layers of a decoder and removing the rest gives a model whose output is the
final norm applied to layer N's states (the norm stays; only layers go). This is NOT what pooling
``hidden_states[N]`` gives (``embench analyze layers``), which skips the final norm; the table's
``final_norm`` column says whether the model has one that was applied (an encoder such as BERT has
none: its layer-N states are the truncated model's output already). N = L is the full model.

Every N is a view of one loaded model (:meth:`HFEncoder.view` with ``final_norm``), so every curve
point comes from ONE forward pass per batch, and each view is cached under its own key. The model's
own pooling is kept (last token for decoders, with its prompt), as in the authors' degradation script.
With ``--bidirectional-last K`` the layers keep the attention they have in the full model, so the
bidirectional top layers are the first removed. Measures per N: STS-B Spearman (``split``, default
dev), and optionally the average of a suite (``suite``, e.g. ``sts-all``, Figure 4's y-axis), whose
texts are encoded for every N in the same single pass before the tasks are scored.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from ..report import style
from .base import AnalysisResult, analysis
from .cosine_density import cosines
from .inputs import stsb, unique, write_csv
from .layers import _suite_average, _suite_spec, parse_layers, suite_texts


@analysis("layer-removal")
def layer_removal(refs, ctx, out, layers=None, split: str = "dev", text: str = "senteval",
                  suite: str | None = None) -> AnalysisResult:
    """STS-B Spearman (and optionally a suite's average) of each model with only its first N layers kept."""
    from ..models.decoder_stack import final_norm

    if isinstance(suite, (list, tuple)):
        suite = ",".join(suite) + ("," if len(suite) == 1 else "")
    if suite:
        _suite_spec(suite)  # an unknown suite fails here, before anything is encoded
    pairs = stsb(ctx.root, split, text)
    sentences = unique(pairs.left + pairs.right)
    rows = []
    for ref in refs:
        full = ref.encoder()
        kept = [n for n in parse_layers(layers, full.num_layers) if n > 0]  # N = 0 keeps no layer at all
        views = [ref.encoder(layer=n, final_norm=True) for n in kept]
        texts = unique(sentences + (suite_texts(suite, ctx) if suite else []))
        ctx.fill_views(views, texts)  # every N from one pass; the suite then reads the cache
        has_norm = final_norm(full.model) is not None
        for n, enc in zip(kept, views, strict=True):
            emb = dict(zip(texts, ctx.embed(enc, texts), strict=True))  # this N's array only, from memory
            cos = cosines(np.stack([emb[s] for s in pairs.left]), np.stack([emb[s] for s in pairs.right]))
            row = {"model": ref.label, "layers_kept": n, "layers_removed": full.num_layers - n, "pooling": enc.pooling,
                   "final_norm": has_norm, "bidirectional_last": full.settings.extra.get("bidirectional_last", 0),
                   "stsb_spearman": float(spearmanr(cos, pairs.gold)[0]) if np.ptp(cos) > 0 else float("nan")}
            if suite:
                row[_suite_spec(suite)[2]] = _suite_average(enc, suite, ctx, out)
            rows.append(row)
            ctx.release(enc)  # done with this N: its vectors leave memory before the next N's tasks run
    frame = pd.DataFrame(rows)
    files = [write_csv(frame, out, "layer_removal")]
    measures = [("stsb_spearman", f"STS-B {split} Spearman (x100)")]
    if suite:
        measures.append((_suite_spec(suite)[2], f"{suite.rstrip(',')} average (x100)"))
    with style.paper_style():
        fig, axes = style.figure(ncols=len(measures))
        for ax, (col, title) in zip(axes[0], measures, strict=True):
            for c, ref in zip(style.palette(len(refs)), refs, strict=True):
                g = frame[frame["model"] == ref.label]
                ax.plot(g["layers_kept"], 100 * g[col], "o-", color=c, label=ref.label, ms=3)
            ax.set_xlabel("layers kept (the rest removed from the top; final norm kept)")
            ax.set_ylabel(title)
            ax.xaxis.get_major_locator().set_params(integer=True)
        axes[0, 0].legend(loc="best")
        fig.tight_layout()
        files += style.save(fig, out, "layer_removal")
    return AnalysisResult("layer-removal", {"layer_removal": frame}, files)

