"""The batch shapes and padding of ``--cuda-graphs``' buckets on sts-all, against the engine's own padding.

    python benchmarks/cuda_graph_shapes.py --tokenizer DIR [--budgets 65536,32768]

No model runs: the engine's own batching (``embench.encoding.batching.batches``, GPU chunks) cuts the 26,083
unique sts-all texts (``EMBENCH_DATA``), tokenised by ``--tokenizer`` (all-MiniLM-L6-v2's: BERT's uncased
WordPiece, as the encode_gpu benchmark's BERT shapes use), with and without the buckets of
``embench/encoding/cuda_graphs.py``. It prints, per budget, the batches, the distinct (rows, width) shapes
(the graphs one pass captures at most) and the padded tokens as a multiple of the real ones. These are the
figures in ``cuda_graphs.py``'s docstring.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")


class _Tokens:
    """The encoder the batching sees: its tokenizer's ids, and a collate that only reports the padded shape."""

    device = "cuda"  # the GPU path: chunks of 4,096 texts, each sorted by tokens

    def __init__(self, tokenizer, max_length: int, graphs):
        self.tokenizer, self.max_length, self.graphs = tokenizer, max_length, graphs

    def pretokenize(self, texts):
        from embench.models.fast_tokens import token_ids

        return token_ids(self.tokenizer, texts, self.max_length)

    def collate(self, features, shape=None):
        rows = features["input_ids"]
        return {"shape": shape or (len(rows), max(map(len, rows))), "real": sum(map(len, rows))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizer", required=True, help="a tokenizer folder (all-MiniLM-L6-v2's)")
    ap.add_argument("--budgets", default="65536,32768", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--max-length", type=int, default=512)
    args = ap.parse_args()
    from encode_gpu import sts_all_texts
    from transformers import AutoTokenizer

    from embench.encoding.batching import batches
    from embench.encoding.cuda_graphs import ShapeGraphs

    texts = sts_all_texts()
    tok = AutoTokenizer.from_pretrained(args.tokenizer)
    for budget in args.budgets:
        for name, graphs in (("eager", None), ("cuda-graphs", ShapeGraphs(args.max_length))):
            engine = type("Engine", (), {"encoder": _Tokens(tok, args.max_length, graphs), "batch_size": None,
                                         "batch_tokens": budget, "stats": {"padded_tokens": 0}})()
            encs = [enc for _, _, enc in batches(engine, texts, on_cpu=False)]
            padded = sum(e["shape"][0] * e["shape"][1] for e in encs)
            real = sum(e["real"] for e in encs)
            print(f"budget {budget:6d} {name:12s} {len(encs):3d} batches, {len({e['shape'] for e in encs}):3d} shapes, "
                  f"padded tokens {padded / real:.3f}x the real {real:,}")


if __name__ == "__main__":
    main()
