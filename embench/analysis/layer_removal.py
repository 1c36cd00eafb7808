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

import pandas as pd

from ..core.errors import EmbenchError
from ..report.per_layer import Measure, per_layer_figure
from .base import AnalysisResult, analysis
from .inputs import stsb, unique, write_csv
from .layers import _suite_spec, layer_list, stsb_spearman, suite_texts, with_suite_average


@analysis("layer-removal")
def layer_removal(refs, ctx, out, layers=None, split: str = "dev", text: str = "senteval",
                  suite: str | None = None) -> AnalysisResult:
    """STS-B Spearman (and optionally a suite's average) of each model with only its first N layers kept."""
    from ..models.layer_stack import final_norm

    if isinstance(suite, (list, tuple)):
        suite = ",".join(suite) + ("," if len(suite) == 1 else "")
    if suite:
        _suite_spec(suite)  # an unknown suite fails here, before anything is encoded
    pairs = stsb(ctx.root, split, text)
    sentences = unique(pairs.left + pairs.right)
    rows = []
    for ref, kept in zip(refs, kept_counts(refs, layers), strict=True):
        full = ref.encoder()
        views = [ref.encoder(layer=n, final_norm=True) for n in kept]
        texts = unique(sentences + (suite_texts(suite, ctx) if suite else []))
        ctx.fill_views(views, texts)  # every N from one pass; the suite then reads the cache
        has_norm = final_norm(full.model) is not None
        for n, enc in zip(kept, views, strict=True):
            emb = dict(zip(texts, ctx.embed(enc, texts), strict=True))  # this N's array only, from memory
            row = {"model": ref.label, "layers_kept": n, "layers_removed": full.num_layers - n, "pooling": enc.pooling,
                   "final_norm": has_norm, "bidirectional_last": full.settings.extra.get("bidirectional_last", 0),
                   "stsb_spearman": stsb_spearman(emb, pairs)}
            rows.append(with_suite_average(row, enc, suite, ctx, out))
    frame = pd.DataFrame(rows)
    files = [write_csv(frame, out, "layer_removal")]
    measures = [Measure("stsb_spearman", f"STS-B {split} Spearman (x100)")]
    if suite:
        measures.append(Measure(_suite_spec(suite)[2], f"{suite.rstrip(',')} average (x100)"))
    files += per_layer_figure(frame, measures, out, "layer_removal", x="layers_kept", scale=100, markersize=3,
                              xlabel="layers kept (the rest removed from the top; final norm kept)")
    return AnalysisResult("layer-removal", {"layer_removal": frame}, files)


def kept_counts(refs, layers) -> list[list[int]]:
    """Each model's N (layers kept, counted from the bottom: 1 to L, -1 = L), checked for every model before any
    encodes. N = 0 keeps no layer at all: given alone it left nothing to encode (an IndexError), among others it was
    dropped without a word; it is an error (said before a model loads), as is an N a model does not have."""
    what = "layer-removal's N is the number of layers kept, counted from the bottom"
    given = None if layers is None or layers == "all" else [int(n) for n in (
        layer_list(layers) if isinstance(layers, str) else [layers] if isinstance(layers, int) else layers)]
    if given is not None and 0 in given:
        raise EmbenchError(f"--layers 0: {what} (1 to L; -1 keeps all L, -2 removes the top one); N = 0 keeps no layer")
    out = []
    for ref in refs:
        total = ref.encoder().num_layers  # loaded once; the pass reuses it
        kept = [n + total + 1 if n < 0 else n for n in given] if given is not None else list(range(1, total + 1))
        for n, k in zip(given or [], kept, strict=False):
            if not 1 <= k <= total:
                why = f"{ref.label} has {total} layers" if n > 0 else f"{n} would keep {k}"
                raise EmbenchError(f"--layers {n}: {what}, 1 to {total} for {ref.label} (-1 keeps all {total}); {why}")
        out.append(sorted(set(kept)))
    return out
