"""Save a randomly initialised small BERT (MiniLM's tokenizer) as a folder: the from-scratch start.

Usage: python analyses/training/make_random_bert.py OUT [--layers 4 --hidden 256 --heads 4 --seed 0]
The folder is the "initial state" the cropping paper's from-scratch experiment (§3.4) compares with.
"""

import argparse

import torch
from transformers import AutoTokenizer, BertConfig, BertModel

from embench.models.loader import resolve_model_path

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--layers", type=int, default=4)
ap.add_argument("--hidden", type=int, default=256)
ap.add_argument("--heads", type=int, default=4)
ap.add_argument("--seed", type=int, default=0)
args = ap.parse_args()
tok = AutoTokenizer.from_pretrained(resolve_model_path("all-MiniLM-L6-v2")[0])
torch.manual_seed(args.seed)
cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=args.hidden, num_hidden_layers=args.layers,
                 num_attention_heads=args.heads, intermediate_size=4 * args.hidden, max_position_embeddings=512)
BertModel(cfg).save_pretrained(args.out)
tok.save_pretrained(args.out)
print(args.out)
