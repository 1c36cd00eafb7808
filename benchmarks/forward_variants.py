"""Other ways to run a BERT forward on this CPU, each against transformers' eager forward and against the
machine's fp32 matmul rate: what was tried for issue 13's FLOP-rate target (>= 0.90), measured here so the
report's "tried without gain" can be run again.

    python benchmarks/forward_variants.py [--model all-MiniLM-L6-v2] [--texts 6000] [--compile] [--out F.json]

A seeded sample of the unique sts-all texts is tokenised once and cut into the engine's batches (sorted by
length, 128 per batch, padded to the longest). On those same batches, in rounds, each followed by ``torch.mm``
of the model's shapes so the host's drift moves both sides of a ratio alike:

  - ``transformers``: the model's own eager forward (what the engine runs);
  - ``ffn-rows-1024``: the same, with each layer's feed-forward run over 1,024 token rows at a time, so its
    (tokens x 1,536) activation stays in cache;
  - ``torch-encoder-layer``: the weights copied into ``torch.nn.TransformerEncoderLayer`` (post-norm, GELU):
    PyTorch's fused inference kernel (``_transformer_encoder_layer_fwd``), padded batches;
  - ``torch-encoder-layer-nested``: the same on nested tensors (no padding at all);
  - with ``--compile``: ``torch.compile`` (inductor, dynamic shapes), plain and with weight freezing.

Every variant's last hidden state is checked against transformers' (max abs difference on real tokens).
Then a GEMM table: MKL (``F.linear``) against oneDNN's linear with its fused post-ops
(``torch.ops.mkldnn._linear_pointwise``) on the model's shapes.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import torch
import torch.nn.functional as F


def sample_batches(model: str, n: int, batch: int = 128):
    import embench
    from embench.data import DataRoot
    from embench.evaluation.suites import SUITES
    from embench.tasks import TASKS

    root = DataRoot.resolve(None)
    texts = sorted({t for name in SUITES.get("sts-all").tasks for t in TASKS.get(name).prepare(root, embench.EvalProtocol()).texts})
    texts = [texts[i] for i in np.random.default_rng(0).permutation(len(texts))[:n]]
    enc = embench.load_model(model)
    tokens = enc.pretokenize(texts)
    order = np.argsort([-len(x) for x in tokens["input_ids"]], kind="stable")
    batches = [enc.collate({k: [v[i] for i in order[b : b + batch]] for k, v in tokens.items()}) for b in range(0, n, batch)]
    return enc.model.eval(), batches


def native_layers(bert) -> list[torch.nn.TransformerEncoderLayer]:
    """BERT's layers as torch's own encoder layers: the same post-norm block, Q/K/V in one projection."""
    cfg, out = bert.config, []
    for layer in bert.encoder.layer:
        t = torch.nn.TransformerEncoderLayer(cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size, dropout=0.0,
                                             activation="gelu", layer_norm_eps=cfg.layer_norm_eps, batch_first=True)
        a, o = layer.attention.self, layer.attention.output
        t.self_attn.in_proj_weight.copy_(torch.cat([a.query.weight, a.key.weight, a.value.weight]))
        t.self_attn.in_proj_bias.copy_(torch.cat([a.query.bias, a.key.bias, a.value.bias]))
        pairs = [(t.self_attn.out_proj, o.dense), (t.norm1, o.LayerNorm), (t.linear1, layer.intermediate.dense),
                 (t.linear2, layer.output.dense), (t.norm2, layer.output.LayerNorm)]
        for mine, theirs in pairs:
            mine.weight.copy_(theirs.weight)
            mine.bias.copy_(theirs.bias)
        out.append(t.eval())
    return out


def variants(bert, compile_too: bool) -> dict:
    from transformers.models.bert import modeling_bert

    layers = native_layers(bert)
    hidden = bert.config.hidden_size

    def hf(e):
        return bert(**e, return_dict=True).last_hidden_state

    def ffn_rows(e, rows=1024):
        original = modeling_bert.BertLayer.feed_forward_chunk

        def chunked(self, x):
            b, n, h = x.shape
            flat, out = x.reshape(b * n, h), torch.empty(b * n, h)
            for s in range(0, b * n, rows):
                out[s : s + rows] = self.output(self.intermediate(flat[s : s + rows]), flat[s : s + rows])
            return out.view(b, n, h)

        modeling_bert.BertLayer.feed_forward_chunk = chunked
        try:
            return hf(e)
        finally:
            modeling_bert.BertLayer.feed_forward_chunk = original

    def native(e, nested=False):
        x = bert.embeddings(input_ids=e["input_ids"], token_type_ids=e.get("token_type_ids"))
        mask = e["attention_mask"].bool()
        if not nested:
            for layer in layers:
                x = layer(x, src_key_padding_mask=~mask)
            return x
        x = torch._nested_tensor_from_mask(x, mask, mask_check=False)
        for layer in layers:
            x = layer(x)
        return x.to_padded_tensor(0.0, (x.size(0), mask.shape[1], hidden))

    out = {"transformers": hf, "ffn-rows-1024": ffn_rows, "torch-encoder-layer": native,
           "torch-encoder-layer-nested": lambda e: native(e, nested=True)}
    if compile_too:
        import torch._inductor.config as inductor

        plain = torch.compile(bert, dynamic=True)
        out["torch.compile"] = lambda e: plain(**e).last_hidden_state

        frozen_model = torch.compile(bert, dynamic=True)

        def frozen(e):  # freezing is read when a graph compiles: on around these calls only, not the plain one's
            inductor.freezing = True
            try:
                return frozen_model(**e).last_hidden_state
            finally:
                inductor.freezing = False

        out["torch.compile+freezing"] = frozen
    return out


def matmul_rate(h: int, inter: int, seconds: float = 3.0) -> float:
    a, wq, wf = torch.randn(128 * 20, h), torch.randn(h, h), torch.randn(h, inter)
    t, reps = time.perf_counter(), 0
    while time.perf_counter() - t < seconds:
        for _ in range(4):
            torch.mm(a, wq)
        for _ in range(2):
            torch.mm(a, wf)
        reps += 1
    return reps * 2 * a.shape[0] * (4 * h * h + 2 * h * inter) / (time.perf_counter() - t) / 1e9


def gemm_table(h: int, inter: int) -> list[dict]:
    def rate(f, x, w, b, seconds=1.5):
        for _ in range(3):
            f(x, w, b)
        t, n = time.perf_counter(), 0
        while time.perf_counter() - t < seconds:
            f(x, w, b)
            n += 1
        return 2 * x.shape[0] * x.shape[1] * w.shape[0] * n / (time.perf_counter() - t) / 1e9

    def onednn(x, w, b):
        return torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], "")

    rows = []
    for m in (1792, 8192):
        for k, n in ((h, 3 * h), (h, h), (h, inter), (inter, h)):
            args = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
            rows.append({"rows": m, "k": k, "n": n, "mkl_linear_gflops": rate(F.linear, *args),
                         "onednn_linear_gflops": rate(onednn, *args)})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--texts", type=int, default=6000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compile", action="store_true", help="also torch.compile (each compiles for 20-30 s first)")
    ap.add_argument("--out")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_grad_enabled(False)
    bert, batches = sample_batches(args.model, args.texts)
    cfg = bert.config
    h, inter = cfg.hidden_size, cfg.intermediate_size
    per_token = 2 * cfg.num_hidden_layers * (4 * h * h + 2 * h * inter)
    flop = per_token * sum(int(e["attention_mask"].sum()) for e in batches)
    runs = variants(bert, args.compile)
    reference = runs["transformers"](batches[1])
    real = batches[1]["attention_mask"].bool()
    results = {}
    for name, f in runs.items():
        t = time.perf_counter()
        diff = float((f(batches[1]) - reference)[real].abs().max())  # also the warm-up (and the compile)
        results[name] = {"max_abs_diff": diff, "first_call_seconds": time.perf_counter() - t, "ratios": [], "gflops": []}
    for _ in range(args.rounds):
        for name, f in runs.items():
            t = time.perf_counter()
            for e in batches:
                f(e)
            gflops = flop / (time.perf_counter() - t) / 1e9
            results[name]["gflops"].append(gflops)
            results[name]["ratios"].append(gflops / matmul_rate(h, inter))
    for name, r in results.items():
        r["ratio_median"] = float(np.median(r["ratios"]))
        print(f"{name:>27}: {np.median(r['gflops']):5.0f} GFLOP/s, {r['ratio_median']:.2f} of matmul "
              f"(rounds {min(r['ratios']):.2f}-{max(r['ratios']):.2f}), max diff {r['max_abs_diff']:.1e}", flush=True)
    gemms = gemm_table(h, inter)
    for g in gemms:
        print(f"GEMM {g['rows']:>5} x {g['k']:>4} x {g['n']:>4}: MKL {g['mkl_linear_gflops']:4.0f}, "
              f"oneDNN {g['onednn_linear_gflops']:4.0f} GFLOP/s")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"model": args.model, "texts": args.texts, "threads": torch.get_num_threads(),
                       "variants": results, "gemms": gemms}, fh, indent=2)
            fh.write("\n")


if __name__ == "__main__":
    main()
