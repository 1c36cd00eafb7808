"""Attention analyses of JTCSE (Section VI.B, Figures 9-10): attention sinks and the CLS energy weight.

* ``attention``: head-averaged attention maps per layer for chosen sentences (JTCSE Figure 9:
  "each subplot represents the average attention weights of a specific layer"), and over a set of
  sentences the share of attention each layer sends to the first token ([CLS]), the last token
  ([SEP]) and the final punctuation mark (the attention sinks). A share is the attention weight
  to that key averaged over heads (``heads="mean"``, or one head by number), over every real
  query token, then over sentences; the punctuation share is averaged over the sentences that end
  in a punctuation token before [SEP] (their number is reported).
* ``cls-energy``: JTCSE Eq. 6, E_CLS = ||h_cls||_2 / ||H_-||_F, where the rows are those of the
  context tensor softmax(QK^T / sqrt(d)) V of a layer's self-attention (before the output
  projection). Open choices, with defaults: heads concatenated (``heads="concat"``; ``"mean"``
  averages the per-head ratios); H_- holds every other real token, [SEP] included
  (``exclude_special=True`` drops special tokens); padding never counts. Reported per layer as
  the mean over sentences, and averaged over layers.

Decoder LLMs work too (left padding; BeLLM Figures 2 and 5 read them): positions are those of the
real tokens wherever the padding is, and the CLS energy's pivot is the last real token for a model
pooled by its last token (``pivot`` column), the first token otherwise; the attention shares to the
first and last tokens are read the same way for both kinds.

A decoder in a BeLLM sum mode (``--bidirectional-mode sum``/``sum-code``) runs its last K layers twice: in the
causal stack and as the bidirectional branch. Both are reported: the main stack's layers 1..L as without the
branch, then the branch's layers L-K+1..L as rows of their own, the model named "<label> (bidirectional
branch)" and ``stack`` = ``bidirectional branch`` (``main`` on every other row); the figures draw the branch as
a line, and its maps as a block, of their own.

Both need attention weights, i.e. the eager attention implementation: an encoder loaded with
SDPA or flash attention is switched to eager when transformers allows it, otherwise a clear
error says which implementation is needed. Both read their states from a per-token pass
(:mod:`embench.analysis.token_pass`), which they share with each other and with
``token-dependency`` when run together (``embench analyze attention,cls-energy,token-dependency``).
"""

from __future__ import annotations

import string
from types import SimpleNamespace

import numpy as np
import pandas as pd

from ..core.errors import EmbenchError
from ..report.per_layer import Measure, per_layer_figure
from .attention_maps import plot_maps
from .base import AnalysisResult, analysis
from .inputs import expand_ensembles, stsb, unique, write_csv, write_json
from .token_pass import BRANCH, MAIN, TokenRequest, ensure_eager, series, stacks_of, token_pass, value_modules

EXAMPLE_SENTENCE = "This is an example sentence for visualising attention scores."  # JTCSE Fig. 9's, ungarbled


def attention_outputs(encoder, texts: list[str]):
    """(tokenized batch, output with ``attentions`` and ``hidden_states``) for distinct ``texts``, eager attention enforced."""
    tb = _one_batch(encoder, texts, attentions=True)
    return tb.enc, SimpleNamespace(attentions=tb.attentions, hidden_states=tb.hidden_states)


def _one_batch(encoder, texts: list[str], **needs: bool):
    """The TokenBatch of distinct ``texts`` run as one batch (``needs``: attentions, values)."""
    got = []
    token_pass([TokenRequest(encoder, texts, lambda tb, _rows: got.append(tb), **needs)], max(len(texts), 1))
    return got[0]


def _real_lengths(enc) -> np.ndarray:
    return enc["attention_mask"].sum(1).cpu().numpy().astype(int)


def _special_ids(tokenizer) -> set[int]:
    return set(getattr(tokenizer, "all_special_ids", []) or [])


def _real(tb, i: int) -> np.ndarray:
    """Positions of row ``i``'s real tokens, in order, under left or right padding."""
    return np.flatnonzero(tb.enc["attention_mask"][i].cpu().numpy())


def pivot_of(encoder) -> str:
    """``last`` for models pooled by their last token (decoder LLMs: the only token that sees the text), else ``first``."""
    return "last" if getattr(encoder, "pooling", None) == "last_token" else "first"


def head_reduce(att: np.ndarray, heads) -> np.ndarray:
    """(H, T, T) -> (T, T): mean over heads, or one head by number."""
    if heads == "mean":
        return att.mean(0)
    if not str(heads).isdigit():  # concat is cls-energy's; a typo was a ValueError traceback
        raise EmbenchError(f"--heads {heads!r}: the attention maps take mean or one head's number")
    h = int(heads)
    if not 0 <= h < att.shape[0]:
        raise EmbenchError(f"--heads {heads} is out of range: the model has heads 0 to {att.shape[0] - 1}")
    return att[h]


def check_models(targets, heads=None, values: bool = False) -> None:
    """What a model could refuse, asked of every model before any runs: the pass runs one model after another, so a
    head number only the first model has, or a model without eager attention or value projections, was an error after
    the first model's whole pass."""
    if heads not in (None, "mean") and not str(heads).isdigit():
        raise EmbenchError(f"--heads {heads!r}: the attention maps take mean or one head's number")
    for label, encoder in targets:
        ensure_eager(encoder)
        if values:
            value_modules(encoder.model, encoder.num_layers)
        config = getattr(encoder.model, "config", None)
        count = next((getattr(config, a) for a in ("num_attention_heads", "n_head", "n_heads") if isinstance(getattr(config, a, None), int)), None)
        if heads not in (None, "mean") and count is not None and int(heads) >= count:
            raise EmbenchError(f"--heads {heads} is out of range for {label}: the model has heads 0 to {count - 1}")


def final_punctuation(tokens: list[str], ids: list[int], special: set[int]) -> int | None:
    """Position of the last non-special token when it is a punctuation mark, else None."""
    for pos in range(len(ids) - 1, -1, -1):
        if ids[pos] in special:
            continue
        tok = tokens[pos].lstrip("Ġ▁#")
        return pos if tok and all(ch in string.punctuation for ch in tok) else None
    return None


def sink_shares(att: np.ndarray, length: int | np.ndarray, punct: int | None, heads="mean") -> dict[str, float]:
    """Attention share to the first token, the last real token and the final punctuation for one sentence.

    ``att`` is one layer's (H, T, T) weights; only the real rows and columns count: the first ``length``
    (right padding), or the positions ``length`` lists (any padding; ``punct`` then counts among them).
    """
    real = np.arange(length) if np.isscalar(length) else np.asarray(length)
    a = head_reduce(att, heads)[np.ix_(real, real)]
    length = len(real)
    return {
        "cls": float(a[:, 0].mean()),
        "sep": float(a[:, length - 1].mean()),
        "punct": float(a[:, punct].mean()) if punct is not None else float("nan"),
    }


# -- attention maps and sinks -----------------------------------------------------------------
@analysis("attention")
def attention(refs, ctx, out, sentences: tuple = (EXAMPLE_SENTENCE,), heads="mean", split: str = "test",
              text: str = "senteval", limit: int | None = 1000, seed: int = 42, batch_size: int = 32) -> AnalysisResult:
    """Per-layer attention maps of ``sentences`` and attention-sink shares over STS-B sentences."""
    texts = [sentences] if isinstance(sentences, str) else list(sentences)
    corpus = _corpus(ctx, split, text, limit, seed)
    shown, in_corpus = set(texts), set(corpus)
    maps: dict[str, dict[str, dict]] = {}
    sums: dict[str, dict[str, dict[int, dict[str, float]]]] = {}  # model -> sentence -> layer -> shares
    requests = []
    targets, _ = expand_ensembles(refs)  # an ensemble's members one by one (each has its own attention)
    check_models(targets, heads)
    stacks = stacks_of(targets)
    for label, enc_model in targets:
        tok, special = enc_model.tokenizer, _special_ids(enc_model.tokenizer)

        def consume(tb, rows, label=label, tok=tok, special=special):
            for i in rows:
                real, sent = _real(tb, i), tb.texts[i]
                ids = tb.enc["input_ids"][i, real].tolist()
                tokens = tok.convert_ids_to_tokens(ids)
                punct = final_punctuation(tokens, ids, special)
                for stack, layer, a in tb.stacks("attentions"):  # the main stack's layers, then a branch's
                    name, a = series(label, stack), a[i].float().cpu().numpy()
                    if sent in shown:
                        m = maps.setdefault(name, {}).setdefault(sent, {"sentence": sent, "tokens": tokens, "layers": [], "layer_numbers": []})
                        m["layers"].append(head_reduce(a, heads)[np.ix_(real, real)].tolist())
                        m["layer_numbers"].append(layer)
                    if sent in in_corpus:
                        sums.setdefault(name, {}).setdefault(sent, {})[layer] = sink_shares(a, real, punct, heads)

        requests.append(TokenRequest(enc_model, texts + corpus, consume, attentions=True, batch_size=batch_size))
    yield requests
    rows = []
    for label, stack in stacks:
        per_sentence = [sums[label][sent] for sent in corpus]  # in the corpus' order, whatever the pass' order
        for layer in sorted(per_sentence[0]) if per_sentence else []:
            p = np.asarray([d[layer]["punct"] for d in per_sentence])
            rows.append({"model": label, "stack": stack, "layer": layer,
                         "cls_share": float(np.mean([d[layer]["cls"] for d in per_sentence])),
                         "sep_share": float(np.mean([d[layer]["sep"] for d in per_sentence])),
                         "punct_share": float(np.nanmean(p)) if np.isfinite(p).any() else float("nan"),
                         "n_sentences": len(per_sentence), "n_with_punct": int(np.isfinite(p).sum()), "heads": str(heads)})
    ordered_maps = {label: [maps[label][t] for t in texts] for label, _ in stacks}
    frame = pd.DataFrame(rows)
    files = [write_csv(frame, out, "attention_sinks"), write_json(ordered_maps, out, "attention_maps")]
    files += per_layer_figure(frame, SINK_PANELS, out, "attention_sinks", ylabel="mean attention weight")
    files += plot_maps(ordered_maps, [label for label, _ in stacks], out)
    return AnalysisResult("attention", {"attention_sinks": frame}, files, {"maps": ordered_maps})


def _corpus(ctx, split, text, limit, seed) -> list[str]:
    pairs = stsb(ctx.root, split, text)
    corpus = unique(pairs.left + pairs.right)
    if limit is not None and limit < len(corpus):
        rng = np.random.default_rng(seed)
        corpus = [corpus[i] for i in sorted(rng.choice(len(corpus), limit, replace=False))]
    return corpus


SINK_PANELS = (Measure("cls_share", "attention share to [CLS] (first token)"),
               Measure("sep_share", "attention share to [SEP] (last token)"),
               Measure("punct_share", "attention share to final punctuation"))


# -- CLS energy weight ------------------------------------------------------------------------
def cls_energy_weight(context: np.ndarray, length: int, exclude: set[int] | None = None, pivot: int = 0) -> float:
    """||context[pivot]|| / ||context[others]||_F for one sentence's (T, D) context tensor, over its first
    ``length`` rows (the real tokens); ``pivot`` 0 is [CLS], -1 the last token (decoder LLMs)."""
    pivot = pivot % length if length else 0
    others = [p for p in range(length) if p != pivot and (not exclude or p not in exclude)]
    if not others:
        return float("nan")
    return float(np.linalg.norm(context[pivot]) / np.linalg.norm(context[others]))


def context_tensors(encoder, texts: list[str]):
    """(enc, per-layer context tensors (B, H, T, d) = softmax(QK^T/sqrt d) V) of distinct ``texts``, one batch."""
    tb = _one_batch(encoder, texts, values=True)
    return tb.enc, tb.contexts


@analysis("cls-energy")
def cls_energy(refs, ctx, out, heads: str = "concat", exclude_special: bool = False, split: str = "test", text: str = "senteval",
               limit: int | None = 1000, seed: int = 42, batch_size: int = 32) -> AnalysisResult:
    """JTCSE Eq. 6 per layer: the CLS row's norm over the other rows' Frobenius norm in the context tensor."""
    if heads not in ("concat", "mean"):
        raise EmbenchError(f"invalid --heads {heads!r} for cls-energy; choose concat or mean")
    corpus = _corpus(ctx, split, text, limit, seed)
    energies: dict[str, dict[str, list[float]]] = {}  # model -> sentence -> E_CLS per layer
    requests = []
    targets, groups = expand_ensembles(refs)  # an ensemble's members one by one (each has its own context tensors)
    check_models(targets, values=True)
    pivots, stacks = {}, stacks_of(targets)
    for label, encoder in targets:
        special = _special_ids(encoder.tokenizer)
        pivots[label] = pivots[series(label, BRANCH)] = pivot_of(encoder)
        at = -1 if pivots[label] == "last" else 0

        def consume(tb, rows, label=label, special=special, at=at):
            for i in rows:
                real = _real(tb, i)
                n = len(real)
                ids = tb.enc["input_ids"][i, real].tolist()
                excl = {p for p, t in enumerate(ids) if t in special} if exclude_special else None
                for stack, layer, c in tb.stacks("contexts"):  # the main stack's layers, then a branch's
                    ci = c[i].cpu().numpy()[:, real]  # (H, real T, d)
                    if heads == "concat":
                        e = cls_energy_weight(ci.transpose(1, 0, 2).reshape(n, -1), n, excl, at)
                    else:
                        e = float(np.mean([cls_energy_weight(ci[h], n, excl, at) for h in range(ci.shape[0])]))
                    energies.setdefault(series(label, stack), {}).setdefault(tb.texts[i], {})[layer] = e

        requests.append(TokenRequest(encoder, corpus, consume, values=True, batch_size=batch_size))
    yield requests
    rows = []
    for label, stack in stacks:
        for layer in sorted(energies[label][corpus[0]]) if corpus else []:
            es = np.asarray([energies[label][t][layer] for t in corpus])  # in the corpus' order
            rows.append({"model": label, "stack": stack, "layer": layer, "cls_energy": float(np.nanmean(es)), "std": float(np.nanstd(es)),
                         "n_sentences": len(es), "heads": heads, "exclude_special": exclude_special, "pivot": pivots[label]})
    for name, members in groups.items():  # an ensemble's E_CLS: the mean of its members' main stacks
        part = pd.DataFrame([r for r in rows if r["model"] in members])
        for layer, g in part.groupby("layer"):
            rows.append({"model": name, "stack": MAIN, "layer": int(layer), "cls_energy": float(g["cls_energy"].mean()), "std": float("nan"),
                         "n_sentences": int(g["n_sentences"].min()), "heads": heads, "exclude_special": exclude_special,
                         "pivot": "/".join(sorted({pivots[m] for m in members}))})
    frame = pd.DataFrame(rows)
    summary = frame.groupby("model", sort=False)["cls_energy"].mean().rename("mean_over_layers").reset_index()
    files = [write_csv(frame, out, "cls_energy"), write_csv(summary, out, "cls_energy_summary")]
    means = {row.model: f"{row.model} (mean {row.mean_over_layers:.3f})" for row in summary.itertuples()}
    files += per_layer_figure(frame, [Measure("cls_energy", r"CLS energy weight $E_{\mathrm{CLS}}$", math=True)], out, "cls_energy", labels=means)
    return AnalysisResult("cls-energy", {"cls_energy": frame, "cls_energy_summary": summary}, files)
